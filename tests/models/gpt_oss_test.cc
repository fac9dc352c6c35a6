// GptOssForCausalLM: the corpus gpt-oss-20b config against its checkpoint index and published
// size, and the per-dialect router name. Expected numbers come from the config's fields.
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
using models_test::SitesFromCorpus;

constexpr const char* kFolder = "openai__gpt-oss-20b";

// Fields of the corpus config.json.
constexpr int64_t kHidden = 2880;
constexpr int64_t kLayers = 24;
constexpr int64_t kHeads = 64;
constexpr int64_t kKvHeads = 8;
constexpr int64_t kHeadDim = 64;
constexpr int64_t kIntermediate = 2880;
constexpr int64_t kExperts = 32;
constexpr int64_t kExpertsPerToken = 4;
constexpr int64_t kVocab = 201088;

TEST(GptOss, SitesOfOneLayer) {
  auto r = SitesFromCorpus(kFolder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  EXPECT_EQ(m.architecture, "GptOssForCausalLM");
  // Embedding, 5 sites per layer, head.
  EXPECT_EQ(m.sites.size(), static_cast<size_t>(2 + 5 * kLayers));
  EXPECT_EQ(m.sites.front().path, "model.embed_tokens");
  EXPECT_EQ(m.sites.back().path, "lm_head");
  EXPECT_EQ(m.sites.back().params, kVocab * kHidden);  // untied, no bias
  const std::vector<std::string> layer = {
      "model.layers.7.self_attn.qkv_proj", "model.layers.7.self_attn.o_proj",
      "model.layers.7.self_attn.attn", "model.layers.7.mlp.router", "model.layers.7.mlp.experts"};
  for (size_t i = 0; i < layer.size(); ++i) EXPECT_EQ(m.sites[1 + 5 * 7 + i].path, layer[i]);

  const int64_t q = kHeads * kHeadDim;
  const int64_t kv = kKvHeads * kHeadDim;
  const LayerSite* qkv = m.Find("model.layers.0.self_attn.qkv_proj");
  ASSERT_NE(qkv, nullptr);
  EXPECT_TRUE(qkv->bias);
  EXPECT_EQ(*qkv->shape, (std::array<int64_t, 2>{q + 2 * kv, kHidden}));
  EXPECT_EQ(qkv->params, (q + 2 * kv) * kHidden + q + 2 * kv);
  const LayerSite* o = m.Find("model.layers.0.self_attn.o_proj");
  EXPECT_EQ(o->params, kHidden * q + kHidden);

  const LayerSite* router = m.Find("model.layers.0.mlp.router");
  ASSERT_NE(router, nullptr);
  EXPECT_EQ(router->kind, SiteKind::kRouter);
  EXPECT_EQ(router->params, kExperts * kHidden + kExperts);

  const LayerSite* experts = m.Find("model.layers.0.mlp.experts");
  ASSERT_NE(experts, nullptr);
  EXPECT_EQ(experts->kind, SiteKind::kMoe);
  EXPECT_EQ(experts->experts, kExperts);
  EXPECT_EQ(*experts->shape, (std::array<int64_t, 2>{kIntermediate, kHidden}));
  ASSERT_EQ(experts->legs.size(), 2u);
  EXPECT_EQ(experts->legs[0].name, "gate_up_proj");
  EXPECT_EQ(experts->legs[0].rows, 2 * kIntermediate);
  EXPECT_EQ(experts->legs[1].name, "down_proj");
  // Weights and biases of gate_up (2I rows) and down (H rows), per expert.
  EXPECT_EQ(experts->params,
            kExperts * (3 * kHidden * kIntermediate + 2 * kIntermediate + kHidden));
  // One tensor per projection holds every expert (`gate_up_proj_blocks` [E, 2I, H/32, 16]).
  EXPECT_TRUE(experts->stacked_experts);
  EXPECT_EQ(experts->ExpertLegPath(5, 0), "model.layers.0.mlp.experts.gate_up_proj");
  EXPECT_EQ(experts->ExpertLegPath(5, 1), "model.layers.0.mlp.experts.down_proj");
}

// The experts' clamped SwiGLU (transformers' GptOssExperts): the limit is the config's
// `swiglu_limit` (7.0 in the corpus config), alpha 1.702. Expected values from the formula in
// Python's math module: (min(up, l) clamped to ±l + 1) · g · 1 / (1 + exp(−1.702 · g)),
// g = min(gate, l).
TEST(GptOss, ExpertActivationIsTheClampedSwiglu) {
  auto r = SitesFromCorpus(kFolder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ExpertActivation& act = r->Find("model.layers.3.mlp.experts")->expert_activation;
  EXPECT_EQ(act.kind, ExpertActivation::Kind::kSwigluOai);
  EXPECT_EQ(act.limit, 7.0);
  EXPECT_EQ(act.alpha, 1.702);
  EXPECT_NEAR(act.Apply(1, 0), 0.8457957659328212, 1e-15);
  EXPECT_NEAR(act.Apply(-2, 3), -0.25736550742316744, 1e-15);
  EXPECT_NEAR(act.Apply(8, -9), -41.99971876981991, 1e-13);  // both clamped
  EXPECT_NEAR(act.Apply(9, 9), 55.99962502642654, 1e-13);
  EXPECT_NEAR(act.Apply(0.5, 0.25), 0.43798554575797516, 1e-15);
  // Another limit from the config; other architectures keep SiLU(gate) · up.
  auto limited = models_test::SitesFromText(R"({"architectures": ["GptOssForCausalLM"],
      "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
      "num_key_value_heads": 1, "head_dim": 32, "intermediate_size": 64,
      "num_local_experts": 2, "vocab_size": 32, "swiglu_limit": 5.5})");
  ASSERT_TRUE(limited.ok()) << limited.status().message();
  EXPECT_NEAR(limited->Find("model.layers.0.mlp.experts")->expert_activation.Apply(9, 9),
              35.74692526248149, 1e-13);
  const ExpertActivation silu;
  EXPECT_EQ(silu.kind, ExpertActivation::Kind::kSiluAndMul);
  EXPECT_NEAR(silu.Apply(1, 2), 2 * 0.7310585786300049, 1e-15);
}

TEST(GptOss, PublishedTotalAndActiveCounts) {
  auto r = SitesFromCorpus(kFolder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // The gpt-oss model card: 20.9B parameters in total ("21B" on the Hugging Face card), 3.6B
  // active per token. Active counts every parameter except the token embedding and the experts a
  // token does not use.
  EXPECT_LT(RelativeError(r->TotalParams(), 20.9e9), 0.005) << r->TotalParams();
  const int64_t per_expert = r->Find("model.layers.0.mlp.experts")->params / kExperts;
  const int64_t unused = kLayers * (kExperts - kExpertsPerToken) * per_expert;
  const int64_t active = r->TotalParams() - unused - r->Find("model.embed_tokens")->params;
  EXPECT_LT(RelativeError(active, 3.6e9), 0.005) << active;
  // Norms and attention sinks: 2 norms and one sink per head per layer, and the final norm.
  EXPECT_EQ(r->other_params, kLayers * (2 * kHidden + kHeads) + kHidden);
}

// Every tensor of the checkpoint belongs to a site, a leg, or a known non-site tensor; every
// linear site's weight is in the checkpoint.
TEST(GptOss, SitesAgreeWithTheCheckpointIndex) {
  auto r = SitesFromCorpus(kFolder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto names = IndexTensorNames(kFolder);
  ASSERT_TRUE(names.ok()) << names.status().message();
  std::set<std::string> tensors(names->begin(), names->end());
  for (const std::string& name : *names) {
    std::string module(ParentPath(name));
    std::string param(LastSegment(name));
    if (LastSegment(module) == "experts") {
      // Fused expert tensors: `<leg>_blocks`, `<leg>_scales`, `<leg>_bias`.
      const LayerSite* site = r->Find(module);
      ASSERT_NE(site, nullptr) << name;
      const std::string leg = param.substr(0, param.rfind('_'));
      EXPECT_TRUE(leg == site->legs[0].name || leg == site->legs[1].name) << name;
      continue;
    }
    if (param == "sinks" || module.ends_with("norm")) continue;  // not sites
    EXPECT_NE(SiteOrLegOf(*r, module), nullptr) << name;
  }
  for (const std::string& path : LinearModulePaths(*r)) {
    EXPECT_TRUE(tensors.contains(path + ".weight")) << path;
    EXPECT_TRUE(tensors.contains(path + ".bias")) << path;
  }
  for (const char* path : {"model.embed_tokens", "lm_head", "model.layers.23.mlp.router"}) {
    EXPECT_TRUE(tensors.contains(std::string(path) + ".weight")) << path;
  }
}

// SGLang's gpt_oss.py passes a quantization config to the experts only (the router, the
// attention block, the embedding and the head are built without one).
TEST(GptOss, SglangListsOnlyTheExperts) {
  auto r = SitesFromCorpus(kFolder, "sglang@helpers");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->sites.size(), 24u);
  for (const LayerSite& site : r->sites) EXPECT_EQ(site.kind, SiteKind::kMoe) << site.path;
  auto native = SitesFromCorpus(kFolder);
  ASSERT_TRUE(native.ok());
  EXPECT_EQ(r->TotalParams(), native->TotalParams());
}

}  // namespace
}  // namespace quantpath
