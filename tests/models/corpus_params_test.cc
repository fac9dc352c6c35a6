// Whole-model parameter counts of real configs (tests/data/corpus, see SOURCES.md there) against
// the published figures: DESIGN.md asks for agreement within 0.5%.
#include <gtest/gtest.h>

#include "quantpath/models.h"
#include "tests/models/models_test_util.h"

namespace quantpath {
namespace {

using models_test::RelativeError;
using models_test::SitesFromCorpus;

constexpr double kTolerance = 0.005;

int64_t MtpSiteParams(const ModelSites& m) {
  int64_t total = 0;
  for (const LayerSite& s : m.sites) total += s.mtp ? s.params : 0;
  return total;
}

// DeepSeek-V3 / R1: 671B in the main model plus 14B in the MTP module, 685B in all (the model
// cards; the Hugging Face page shows 685B).
void ExpectDeepseekV3Totals(const char* folder) {
  auto r = SitesFromCorpus(folder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  EXPECT_EQ(m.architecture, "DeepseekV3ForCausalLM");
  EXPECT_LT(RelativeError(m.TotalParams(), 685e9), kTolerance) << m.TotalParams();
  // Norms are a few million parameters, far below the tolerance, so the main model's sites alone
  // must match 671B.
  const int64_t mtp = MtpSiteParams(m);
  EXPECT_LT(RelativeError(m.SiteParams() - mtp, 671e9), kTolerance) << m.SiteParams() - mtp;
  // "14B" is rounded to the billion, as are 671B and 685B.
  EXPECT_GE(mtp, 13'000'000'000);
  EXPECT_LE(mtp, 15'000'000'000);
  // 61 layers (3 dense) + 1 MTP layer.
  EXPECT_NE(m.Find("model.layers.2.mlp.gate_up_proj"), nullptr);
  EXPECT_NE(m.Find("model.layers.3.mlp.experts"), nullptr);
  const LayerSite* mtp_experts = m.Find("model.layers.61.mlp.experts");
  ASSERT_NE(mtp_experts, nullptr);
  EXPECT_TRUE(mtp_experts->mtp);
  EXPECT_EQ(mtp_experts->experts, 256);
  EXPECT_EQ(*m.Find("model.layers.0.self_attn.fused_qkv_a_proj")->shape,
            (std::array<int64_t, 2>{1536 + 512 + 64, 7168}));
  EXPECT_EQ(m.sites.back().path, "model.layers.61.shared_head.head");
  EXPECT_EQ(m.torch_dtype, QDType::kBF16);
}

TEST(CorpusParams, DeepseekR1) { ExpectDeepseekV3Totals("deepseek-ai__DeepSeek-R1"); }

TEST(CorpusParams, DeepseekV3Base) { ExpectDeepseekV3Totals("deepseek-ai__DeepSeek-V3-Base"); }

TEST(CorpusParams, KimiK2) {
  // Kimi-K2: 1T total in the model card; the Hugging Face page shows 1.03T.
  auto r = SitesFromCorpus("moonshotai__Kimi-K2-Instruct");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->architecture, "DeepseekV3ForCausalLM");
  EXPECT_LT(RelativeError(r->TotalParams(), 1.03e12), kTolerance) << r->TotalParams();
  EXPECT_EQ(MtpSiteParams(*r), 0);  // num_nextn_predict_layers 0
  EXPECT_EQ(r->Find("model.layers.1.mlp.experts")->experts, 384);
  EXPECT_NE(r->Find("model.layers.0.mlp.gate_up_proj"), nullptr);  // first_k_dense_replace 1
}

TEST(CorpusParams, Llama2_13B) {
  // Llama-2-13B: 13,015,864,320 parameters. The count is exact, not only within tolerance.
  auto r = SitesFromCorpus("TheBloke__Llama-2-13B-chat-GPTQ");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->TotalParams(), 13'015'864'320);
  EXPECT_LT(RelativeError(r->TotalParams(), 13'015'864'320.0), kTolerance);
  EXPECT_EQ(r->torch_dtype, QDType::kFP16);
}

TEST(CorpusParams, Llama2_70B_Gqa) {
  // Genz-70b is a Llama-2-70B fine-tune (64 heads, 8 KV heads): 68,976,648,192 parameters.
  auto r = SitesFromCorpus("TheBloke__Genz-70b-GPTQ");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->TotalParams(), 68'976'648'192);
  const LayerSite* qkv = r->Find("model.layers.79.self_attn.qkv_proj");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(*qkv->shape, (std::array<int64_t, 2>{8192 + 2 * 1024, 8192}));
}

TEST(CorpusParams, Qwen3_14B) {
  // Qwen3-14B: 14.8B parameters in the model card.
  auto r = SitesFromCorpus("Qwen__Qwen3-14B-MLX-4bit");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->architecture, "Qwen3ForCausalLM");
  EXPECT_LT(RelativeError(r->TotalParams(), 14.8e9), kTolerance) << r->TotalParams();
}

}  // namespace
}  // namespace quantpath
