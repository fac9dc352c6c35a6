// GPTBigCodeForCausalLM: WizardCoder-15B (StarCoder) from the corpus, and the config defaults
// (multi-query, n_inner, tied head) on small synthetic configs.
#include <gtest/gtest.h>

#include "fmt/format.h"
#include "quantpath/models.h"
#include "tests/models/models_test_util.h"

namespace quantpath {
namespace {

using models_test::Paths;
using models_test::RelativeError;
using models_test::SitesFromCorpus;
using models_test::SitesFromText;

TEST(GptBigCode, WizardCoder15B) {
  auto r = SitesFromCorpus("TheBloke__WizardCoder-15B-1.0-GPTQ");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  EXPECT_EQ(m.architecture, "GPTBigCodeForCausalLM");
  // n_embd 6144, n_head 48 (head 128), multi_query: q plus one k and one v head.
  const LayerSite* c_attn = m.Find("transformer.h.39.attn.c_attn");
  ASSERT_NE(c_attn, nullptr);
  EXPECT_EQ(*c_attn->shape, (std::array<int64_t, 2>{6144 + 2 * 128, 6144}));
  EXPECT_TRUE(c_attn->bias);
  EXPECT_EQ(*m.Find("transformer.h.0.mlp.c_fc")->shape, (std::array<int64_t, 2>{24576, 6144}));
  const LayerSite* wpe = m.Find("transformer.wpe");
  ASSERT_NE(wpe, nullptr);
  EXPECT_EQ(wpe->kind, SiteKind::kEmbedding);
  EXPECT_EQ(wpe->module_class, "Embedding");
  EXPECT_EQ(*wpe->shape, (std::array<int64_t, 2>{8192, 6144}));
  // No tie_word_embeddings in the config: transformers' default ties the head to wte.
  EXPECT_EQ(m.Find("lm_head")->params, 0);
  // StarCoder's published size: 15.5B parameters.
  EXPECT_LT(RelativeError(m.TotalParams(), 15.5e9), 0.005) << m.TotalParams();
}

std::string Config(std::string_view extra) {
  return fmt::format(R"({{"architectures": ["GPTBigCodeForCausalLM"], "n_embd": 64,
      "n_layer": 2, "n_head": 4, "n_positions": 32, "vocab_size": 100 {}}})",
                     extra);
}

TEST(GptBigCode, SitesAndCountsFromConfigFields) {
  auto r = SitesFromText(Config(R"(, "n_inner": null)"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const int64_t h = 64;
  const int64_t head = 16;
  const int64_t inner = 4 * h;  // n_inner null
  std::vector<std::string> expected = {"transformer.wte", "transformer.wpe"};
  for (int i = 0; i < 2; ++i) {
    for (const char* name : {"attn.c_attn", "attn.c_proj", "attn.attn", "mlp.c_fc", "mlp.c_proj"}) {
      expected.push_back(fmt::format("transformer.h.{}.{}", i, name));
    }
  }
  expected.push_back("lm_head");
  EXPECT_EQ(Paths(*r), expected);
  const int64_t qkv_rows = h + 2 * head;  // multi_query defaults to true
  const int64_t per_layer = qkv_rows * h + qkv_rows + h * h + h + inner * h + inner + h * inner + h;
  EXPECT_EQ(r->SiteParams(), 2 * per_layer + 100 * h + 32 * h);  // tied head: no params
  EXPECT_EQ(r->other_params, 2 * 4 * h + 2 * h);                 // ln_1, ln_2 per block, ln_f

  auto mha = SitesFromText(Config(R"(, "multi_query": false, "tie_word_embeddings": false)"));
  ASSERT_TRUE(mha.ok()) << mha.status().message();
  EXPECT_EQ((*mha->Find("transformer.h.0.attn.c_attn")->shape)[0], 3 * h);
  EXPECT_EQ(mha->Find("lm_head")->params, 100 * h);
}

TEST(GptBigCode, ErrorsNameGpt2Fields) {
  auto r = SitesFromText(R"({"architectures": ["GPTBigCodeForCausalLM"], "n_embd": 64,
      "n_layer": 2, "n_head": 5, "n_positions": 32, "vocab_size": 100})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("config.json#/n_head"), std::string::npos);
  auto missing = SitesFromText(R"({"architectures": ["GPTBigCodeForCausalLM"], "n_layer": 2,
      "n_head": 4, "n_positions": 32, "vocab_size": 100})");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("config.json#/n_embd"), std::string::npos);
}

}  // namespace
}  // namespace quantpath
