// Glm4MoeForCausalLM: GLM-4.5 from the corpus against its published size, and the layer rules
// (dense first layers, biases, q/k norms, MTP) on small synthetic configs.
#include <gtest/gtest.h>

#include "fmt/format.h"
#include "quantpath/models.h"
#include "tests/models/models_test_util.h"

namespace quantpath {
namespace {

using models_test::Paths;
using models_test::RelativeError;
using models_test::SiteParamsWhere;
using models_test::SitesFromCorpus;
using models_test::SitesFromText;

TEST(Glm4Moe, Glm45) {
  auto r = SitesFromCorpus("zai-org__GLM-4.5");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  EXPECT_EQ(m.architecture, "Glm4MoeForCausalLM");
  // 92 layers (3 dense), then the MTP layer 92.
  EXPECT_NE(m.Find("model.layers.2.mlp.gate_up_proj"), nullptr);
  const LayerSite* experts = m.Find("model.layers.3.mlp.experts");
  ASSERT_NE(experts, nullptr);
  EXPECT_EQ(experts->experts, 160);
  const LayerSite* qkv = m.Find("model.layers.0.self_attn.qkv_proj");
  // 96 heads and 8 KV heads of head_dim 128, from hidden 5120.
  EXPECT_EQ(*qkv->shape, (std::array<int64_t, 2>{(96 + 2 * 8) * 128, 5120}));
  EXPECT_TRUE(qkv->bias);
  EXPECT_FALSE(m.Find("model.layers.0.self_attn.o_proj")->bias);
  const LayerSite* mtp = m.Find("model.layers.92.mlp.experts");
  ASSERT_NE(mtp, nullptr);
  EXPECT_TRUE(mtp->mtp);
  EXPECT_EQ(m.sites.back().path, "model.layers.92.shared_head.head");
  // The tensors of no site, as DeepSeek-V3 names them (GLM-4.5 keeps its checkpoint layout):
  // q/k norms (use_qk_norm), the router's bias in the MoE layers, the MTP layer's norms.
  std::vector<std::pair<std::string, std::vector<int64_t>>> others;
  for (const OtherTensor& t : m.other_tensors) {
    if (t.name.starts_with("model.layers.3.") || t.name.starts_with("model.layers.92.")) {
      others.emplace_back(t.name, t.shape);
    }
  }
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"model.layers.3.self_attn.q_norm.weight", {128}},
      {"model.layers.3.self_attn.k_norm.weight", {128}},
      {"model.layers.3.mlp.gate.e_score_correction_bias", {160}},
      {"model.layers.3.input_layernorm.weight", {5120}},
      {"model.layers.3.post_attention_layernorm.weight", {5120}},
      {"model.layers.92.enorm.weight", {5120}},
      {"model.layers.92.hnorm.weight", {5120}},
      {"model.layers.92.self_attn.q_norm.weight", {128}},
      {"model.layers.92.self_attn.k_norm.weight", {128}},
      {"model.layers.92.mlp.gate.e_score_correction_bias", {160}},
      {"model.layers.92.input_layernorm.weight", {5120}},
      {"model.layers.92.post_attention_layernorm.weight", {5120}},
      {"model.layers.92.shared_head.norm.weight", {5120}}};
  EXPECT_EQ(others, expected);

  // GLM-4.5's card says 355B. That rounded figure leaves out the MTP layer, which the checkpoint
  // stores with its own embedding and head (5.5B); the checkpoint holds 358.3B, the 358B the
  // Hugging Face page shows. The main model alone is 352.8B, 0.6% under the card's figure.
  EXPECT_LT(RelativeError(m.TotalParams(), 358e9), 0.005) << m.TotalParams();
  const int64_t mtp_params = SiteParamsWhere(m, [](const LayerSite& s) { return s.mtp; });
  EXPECT_GT(mtp_params, 5'000'000'000);
  EXPECT_LT(mtp_params, 6'000'000'000);
  EXPECT_LT(RelativeError(m.TotalParams() - mtp_params, 355e9), 0.01);
}

struct Dims {
  int64_t hidden = 64;
  int64_t layers = 3;
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t head_dim = 32;
  int64_t intermediate = 96;
  int64_t experts = 8;
  int64_t moe_intermediate = 16;
  int64_t shared = 1;
  int64_t first_dense = 1;
  int64_t mtp = 1;
  int64_t vocab = 100;
};

std::string Config(const Dims& d) {
  return fmt::format(
      R"({{"architectures": ["Glm4MoeForCausalLM"], "hidden_size": {}, "num_hidden_layers": {},
          "num_attention_heads": {}, "num_key_value_heads": {}, "head_dim": {},
          "intermediate_size": {}, "n_routed_experts": {}, "moe_intermediate_size": {},
          "n_shared_experts": {}, "first_k_dense_replace": {}, "num_nextn_predict_layers": {},
          "vocab_size": {}, "attention_bias": true, "use_qk_norm": true,
          "partial_rotary_factor": 0.5}})",
      d.hidden, d.layers, d.heads, d.kv_heads, d.head_dim, d.intermediate, d.experts,
      d.moe_intermediate, d.shared, d.first_dense, d.mtp, d.vocab);
}

TEST(Glm4Moe, LayersFromConfigFields) {
  const Dims d;
  auto r = SitesFromText(Config(d));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  const int64_t q = d.heads * d.head_dim;
  const int64_t kv = d.kv_heads * d.head_dim;
  const int64_t attention = (q + 2 * kv) * d.hidden + (q + 2 * kv) + d.hidden * q;
  const int64_t dense = 3 * d.hidden * d.intermediate;
  const int64_t moe = d.experts * d.hidden + 3 * d.hidden * d.shared * d.moe_intermediate +
                      d.experts * 3 * d.hidden * d.moe_intermediate;
  const int64_t main =
      d.vocab * d.hidden + attention + dense + 2 * (attention + moe) + d.vocab * d.hidden;
  const int64_t mtp =
      d.vocab * d.hidden + d.hidden * 2 * d.hidden + attention + moe + d.vocab * d.hidden;
  EXPECT_EQ(m.SiteParams(), main + mtp);
  // Per layer: q/k norms and two layer norms, plus the router bias on MoE layers; model.norm;
  // MTP: enorm, hnorm, shared_head.norm.
  const int64_t layer_other = 2 * d.head_dim + 2 * d.hidden;
  EXPECT_EQ(m.other_params, (d.layers + d.mtp) * layer_other + (d.layers - 1 + d.mtp) * d.experts +
                                d.hidden + 3 * d.hidden);

  std::vector<std::string> mtp_paths;
  for (const LayerSite& s : m.sites) {
    if (s.mtp) mtp_paths.push_back(s.path);
  }
  EXPECT_EQ(mtp_paths, (std::vector<std::string>{
                           "model.layers.3.embed_tokens", "model.layers.3.eh_proj",
                           "model.layers.3.self_attn.qkv_proj", "model.layers.3.self_attn.o_proj",
                           "model.layers.3.self_attn.attn", "model.layers.3.mlp.gate",
                           "model.layers.3.mlp.shared_experts.gate_up_proj",
                           "model.layers.3.mlp.shared_experts.down_proj",
                           "model.layers.3.mlp.experts", "model.layers.3.shared_head.head"}));
  EXPECT_EQ(Paths(m)[m.sites.size() - mtp_paths.size() - 1], "lm_head");
}

TEST(Glm4Moe, WithoutRoutedExpertsEveryLayerIsDense) {
  Dims d;
  std::string config = Config(d);
  config.replace(config.find(R"("n_routed_experts": 8)"), 21, R"("n_routed_experts": null)");
  auto r = SitesFromText(config);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const LayerSite& s : r->sites) EXPECT_NE(s.kind, SiteKind::kMoe) << s.path;
  EXPECT_NE(r->Find("model.layers.3.mlp.gate_up_proj"), nullptr);
}

}  // namespace
}  // namespace quantpath
