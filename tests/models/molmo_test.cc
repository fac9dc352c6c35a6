// MolmoForCausalLM: Molmo-7B-D (bitsandbytes NF4) from the corpus against its checkpoint index,
// whose metadata states the parameter count, and its skip list.
#include <gtest/gtest.h>

#include <set>

#include "fmt/format.h"
#include "quantpath/models.h"
#include "tests/models/models_test_util.h"

namespace quantpath {
namespace {

using models_test::IndexTensorNames;
using models_test::LinearModulePaths;
using models_test::SiteOrLegOf;
using models_test::SitesFromCorpus;

constexpr const char* kFolder = "reubzdubz__Molmo7B_D_NF4Quant";

TEST(Molmo, CountEqualsTheIndexMetadata) {
  auto r = SitesFromCorpus(kFolder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto index = ReadJsonFile(std::string(QUANTPATH_TEST_DATA) + "/corpus/" + kFolder +
                            "/model.safetensors.index.json");
  ASSERT_TRUE(index.ok()) << index.status().message();
  const Json* total = index->Find("metadata")->Find("total_parameters");
  ASSERT_NE(total, nullptr);
  EXPECT_EQ(r->TotalParams(), total->int_value());  // 8,021,025,280
}

TEST(Molmo, Sites) {
  auto r = SitesFromCorpus(kFolder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  EXPECT_EQ(m.architecture, "MolmoForCausalLM");
  // The vision backbone is built first, the head last.
  EXPECT_EQ(m.sites.front().path, "model.vision_backbone.image_vit.patch_embedding");
  EXPECT_EQ(m.sites.back().path, "model.transformer.ff_out");
  EXPECT_EQ(m.sites.back().kind, SiteKind::kLmHead);
  // hidden 3584, 28 heads, 4 KV heads (head 128), qkv_bias.
  const LayerSite* att = m.Find("model.transformer.blocks.27.att_proj");
  ASSERT_NE(att, nullptr);
  EXPECT_EQ(att->module_class, "QKVParallelLinear");
  EXPECT_EQ(*att->shape, (std::array<int64_t, 2>{3584 + 2 * 4 * 128, 3584}));
  EXPECT_TRUE(att->bias);
  // ff_proj holds gate and up (intermediate_size 37888 = 2 × 18944).
  EXPECT_EQ(*m.Find("model.transformer.blocks.0.ff_proj")->shape,
            (std::array<int64_t, 2>{37888, 3584}));
  EXPECT_EQ(*m.Find("model.transformer.blocks.0.ff_out")->shape,
            (std::array<int64_t, 2>{3584, 18944}));
  // embedding_size 152064 plus the 128 extra tokens of wte.new_embedding.
  EXPECT_EQ(*m.Find("model.transformer.wte")->shape, (std::array<int64_t, 2>{152064 + 128, 3584}));
  const LayerSite* merged = m.Find("model.vision_backbone.image_projector.merged_linear");
  ASSERT_NE(merged, nullptr);
  EXPECT_EQ(merged->LegPath(0), "model.vision_backbone.image_projector.w1");
  EXPECT_EQ(merged->LegPath(1), "model.vision_backbone.image_projector.w3");
  EXPECT_EQ(*m.Find("model.vision_backbone.image_pooling_2d.wq")->shape,
            (std::array<int64_t, 2>{1024, 2048}));
}

TEST(Molmo, SitesAgreeWithTheCheckpointIndex) {
  auto r = SitesFromCorpus(kFolder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto names = IndexTensorNames(kFolder);
  ASSERT_TRUE(names.ok()) << names.status().message();
  std::set<std::string> modules;
  for (const std::string& name : *names) {
    // bitsandbytes keeps a weight's quantization state under the weight's name.
    const size_t weight = name.find(".weight");
    if (weight == std::string::npos) continue;  // biases, embeddings and loose parameters
    const std::string module = name.substr(0, weight);
    modules.insert(module);
    if (module.ends_with("norm") || module.ends_with("pre_ln") || module.ends_with("ln_f")) {
      continue;
    }
    EXPECT_NE(SiteOrLegOf(*r, module), nullptr) << name;
  }
  for (const std::string& path : LinearModulePaths(*r)) {
    EXPECT_TRUE(modules.contains(path)) << path;
  }
  EXPECT_TRUE(modules.contains("model.transformer.ff_out"));
}

TEST(Molmo, SkipListNamesSites) {
  auto r = SitesFromCorpus(kFolder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // llm_int8_skip_modules: model.vision_backbone, model.transformer.ff_out (the head),
  // model.transformer.ln_f (a norm).
  int vision = 0;
  for (const LayerSite& s : r->sites) vision += s.path.starts_with("model.vision_backbone.");
  // patch_embedding, 23 blocks × 6, pooling 4, projector 2.
  EXPECT_EQ(vision, 1 + 23 * 6 + 4 + 2);
  EXPECT_EQ(r->Find("model.transformer.ff_out")->kind, SiteKind::kLmHead);
}

}  // namespace
}  // namespace quantpath
