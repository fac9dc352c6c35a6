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
  auto r = SitesFromCorpus(kFolder, "sglang");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->sites.size(), 24u);
  for (const LayerSite& site : r->sites) EXPECT_EQ(site.kind, SiteKind::kMoe) << site.path;
  auto native = SitesFromCorpus(kFolder);
  ASSERT_TRUE(native.ok());
  EXPECT_EQ(r->TotalParams(), native->TotalParams());
}

}  // namespace
}  // namespace quantpath
