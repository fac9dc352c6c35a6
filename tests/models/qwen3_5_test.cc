// Qwen3_5ForConditionalGeneration: the corpus Qwen3.6-27B configs against the names their
// quantization configs use and the published size; the MoE variant and the layer-type rules on
// small synthetic configs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "fmt/format.h"
#include "quantpath/models.h"
#include "tests/models/models_test_util.h"

namespace quantpath {
namespace {

using models_test::RelativeError;
using models_test::SiteOrLegOf;
using models_test::SitesFromCorpus;
using models_test::SitesFromText;
using ::testing::HasSubstr;

constexpr const char* kCompressedTensors = "fantasylord__Qwen36";
constexpr const char* kAutoRound = "hualayn__ai-articles__Qwen3.6-27B-AutoRound-AWQ";

TEST(Qwen3_5, HybridLayers) {
  auto r = SitesFromCorpus(kCompressedTensors);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  EXPECT_EQ(m.architecture, "Qwen3_5ForConditionalGeneration");
  // text_config: 64 layers, every 4th full attention; hidden 5120.
  const std::string linear = "model.language_model.layers.0.linear_attn";
  const LayerSite* qkvz = m.Find(linear + ".in_proj_qkvz");
  ASSERT_NE(qkvz, nullptr);
  // 16 key heads × 128 (q and k), 48 value heads × 128 (v, then z).
  ASSERT_EQ(qkvz->legs.size(), 2u);
  EXPECT_EQ(qkvz->LegPath(0), linear + ".in_proj_qkv");
  EXPECT_EQ(qkvz->legs[0].rows, 2 * 16 * 128 + 48 * 128);
  EXPECT_EQ(qkvz->LegPath(1), linear + ".in_proj_z");
  EXPECT_EQ(qkvz->legs[1].rows, 48 * 128);
  const LayerSite* ba = m.Find(linear + ".in_proj_ba");
  ASSERT_NE(ba, nullptr);
  EXPECT_EQ(*ba->shape, (std::array<int64_t, 2>{2 * 48, 5120}));
  EXPECT_EQ(*m.Find(linear + ".out_proj")->shape, (std::array<int64_t, 2>{5120, 48 * 128}));
  EXPECT_EQ(m.Find("model.language_model.layers.0.self_attn.qkv_proj"), nullptr);

  const LayerSite* qkv = m.Find("model.language_model.layers.3.self_attn.qkv_proj");
  ASSERT_NE(qkv, nullptr);
  // attn_output_gate: q_proj emits 24 heads × 256 queries and as many gates.
  EXPECT_EQ(qkv->legs[0].rows, 2 * 24 * 256);
  EXPECT_EQ(qkv->legs[1].rows, 4 * 256);
  EXPECT_EQ(*m.Find("model.language_model.layers.3.self_attn.o_proj")->shape,
            (std::array<int64_t, 2>{5120, 24 * 256}));
  EXPECT_EQ(m.Find("model.language_model.layers.3.linear_attn.in_proj_qkvz"), nullptr);

  int full = 0;
  int linear_layers = 0;
  int attention_sites = 0;
  for (const LayerSite& s : m.sites) {
    if (s.mtp) continue;
    full += s.path.ends_with(".self_attn.qkv_proj");
    linear_layers += s.path.ends_with(".linear_attn.in_proj_qkvz");
    attention_sites += s.kind == SiteKind::kAttention;
  }
  EXPECT_EQ(full, 16);
  EXPECT_EQ(linear_layers, 48);
  EXPECT_EQ(attention_sites, 16);  // linear-attention layers have no KV cache
}

TEST(Qwen3_5, VisionTowerThenLanguageModelThenMtp) {
  auto r = SitesFromCorpus(kCompressedTensors);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::vector<std::string> paths = models_test::Paths(*r);
  // vLLM builds the merger before the blocks.
  EXPECT_EQ(paths[0], "model.visual.pos_embed");
  EXPECT_EQ(paths[1], "model.visual.merger.linear_fc1");
  EXPECT_EQ(paths[2], "model.visual.merger.linear_fc2");
  EXPECT_EQ(paths[3], "model.visual.blocks.0.attn.qkv");
  // vision_config: hidden 1152, intermediate 4304, 27 blocks, merge 2, out 5120.
  EXPECT_EQ(*r->Find("model.visual.blocks.26.mlp.linear_fc1")->shape,
            (std::array<int64_t, 2>{4304, 1152}));
  EXPECT_EQ(*r->Find("model.visual.merger.linear_fc2")->shape,
            (std::array<int64_t, 2>{5120, 4 * 1152}));
  EXPECT_EQ(paths[3 + 27 * 4], "model.language_model.embed_tokens");
  // mtp_num_hidden_layers 1: fc, then one full-attention layer, after the head.
  const auto head = std::find(paths.begin(), paths.end(), "lm_head");
  ASSERT_NE(head, paths.end());
  EXPECT_EQ(*(head + 1), "mtp.fc");
  EXPECT_EQ(*(head + 2), "mtp.layers.0.self_attn.qkv_proj");
  EXPECT_EQ(paths.back(), "mtp.layers.0.mlp.down_proj");
  EXPECT_EQ(*r->Find("mtp.fc")->shape, (std::array<int64_t, 2>{5120, 2 * 5120}));
  for (auto it = head + 1; it != paths.end(); ++it) EXPECT_TRUE(r->Find(*it)->mtp) << *it;
  EXPECT_FALSE(r->Find("lm_head")->mtp);
}

TEST(Qwen3_5, PublishedSize) {
  auto r = SitesFromCorpus(kCompressedTensors);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Qwen3.6-27B's model.safetensors.index.json: total_size 55.56 GB of bf16, 27.78B parameters
  // (vision tower and MTP module included; the card rounds to 27B).
  EXPECT_LT(RelativeError(r->TotalParams(), 27.78e9), 0.005) << r->TotalParams();
}

// Every entry of the compressed-tensors ignore list names a site, a leg, or one of the non-linear
// modules listed here (a gated norm: its weight is an other tensor).
TEST(Qwen3_5, CompressedTensorsIgnoreListResolves) {
  auto r = SitesFromCorpus(kCompressedTensors);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto config = ReadJsonFile(std::string(QUANTPATH_TEST_DATA) + "/corpus/" + kCompressedTensors +
                             "/config.json");
  ASSERT_TRUE(config.ok()) << config.status().message();
  const Json* ignore = config->Find("quantization_config")->Find("ignore");
  ASSERT_NE(ignore, nullptr);
  ASSERT_EQ(ignore->items().size(), 304u);
  int linear_attn_parents = 0;
  int gated_norms = 0;
  for (const Json& item : ignore->items()) {
    const std::string& name = item.string_value();
    // The Gated DeltaNet module itself and its gated RMSNorm are not linear layers.
    if (name.ends_with(".linear_attn")) {
      ++linear_attn_parents;
      EXPECT_NE(r->Find(name + ".out_proj"), nullptr) << name;
      continue;
    }
    if (name.ends_with(".linear_attn.norm")) {
      ++gated_norms;
      const auto& others = r->other_tensors;
      EXPECT_TRUE(std::any_of(others.begin(), others.end(), [&](const OtherTensor& t) {
        return t.name == name + ".weight";
      })) << name;
      continue;
    }
    EXPECT_NE(SiteOrLegOf(*r, name), nullptr) << name;
  }
  EXPECT_EQ(linear_attn_parents, 48);
  EXPECT_EQ(gated_norms, 48);
}

// The tensors of no site, by the checkpoint's names (model.language_model., model.visual., mtp.)
// and with the text and vision configs' sizes.
TEST(Qwen3_5, OtherTensors) {
  auto r = SitesFromCorpus(kCompressedTensors);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::map<std::string, std::vector<int64_t>, std::less<>> others;
  for (const OtherTensor& t : r->other_tensors) others.emplace(t.name, t.shape);
  const std::string layers = "model.language_model.layers.";
  // 48 value heads of 128 in a Gated DeltaNet layer, head_dim 256 in a full-attention one; a
  // vision tower 1152 wide with 16-pixel patches over 2 frames.
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"model.visual.patch_embed.proj.weight", {1152, 3, 2, 16, 16}},
      {"model.visual.patch_embed.proj.bias", {1152}},
      {"model.visual.merger.norm.weight", {1152}},
      {"model.visual.merger.norm.bias", {1152}},
      {"model.visual.blocks.26.norm1.weight", {1152}},
      {"model.visual.blocks.26.norm2.bias", {1152}},
      {layers + "0.linear_attn.dt_bias", {48}},
      {layers + "0.linear_attn.A_log", {48}},
      {layers + "0.linear_attn.norm.weight", {128}},
      {layers + "0.input_layernorm.weight", {5120}},
      {layers + "3.self_attn.q_norm.weight", {256}},
      {layers + "3.self_attn.k_norm.weight", {256}},
      {layers + "63.post_attention_layernorm.weight", {5120}},
      {"model.language_model.norm.weight", {5120}},
      {"mtp.layers.0.self_attn.q_norm.weight", {256}},
      {"mtp.layers.0.input_layernorm.weight", {5120}},
      {"mtp.norm.weight", {5120}},
      {"mtp.pre_fc_norm_hidden.weight", {5120}},
      {"mtp.pre_fc_norm_embedding.weight", {5120}}};
  for (const auto& [name, shape] : expected) {
    auto it = others.find(name);
    ASSERT_NE(it, others.end()) << name;
    EXPECT_EQ(it->second, shape) << name;
  }
  // Vision: the patch embedding's weight and bias, the merger's norm, two LayerNorms in each of
  // 27 blocks. Language: five in each of the 48 Gated DeltaNet layers, four in each of the 16
  // full-attention ones, the final norm. MTP: one full-attention layer's four, its three norms.
  EXPECT_EQ(r->other_tensors.size(), 2u + 2 + 27 * 4 + 48 * 5 + 16 * 4 + 1 + 4 + 3);
  EXPECT_EQ(others.size(), r->other_tensors.size());
}

// AutoRound's modules_to_not_convert mixes full paths, path prefixes, bare suffixes and a bare
// `visual`; each is a run of whole segments of some site or leg path.
TEST(Qwen3_5, AutoRoundSkipListResolves) {
  auto r = SitesFromCorpus(kAutoRound);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto config =
      ReadJsonFile(std::string(QUANTPATH_TEST_DATA) + "/corpus/" + kAutoRound + "/config.json");
  ASSERT_TRUE(config.ok()) << config.status().message();
  const Json* skip = config->Find("quantization_config")->Find("modules_to_not_convert");
  ASSERT_NE(skip, nullptr);
  std::vector<std::string> modules;  // every site path and leg path
  for (const LayerSite& s : r->sites) {
    modules.push_back(s.path);
    if (s.kind == SiteKind::kMoe) continue;
    for (size_t i = 0; i < s.legs.size(); ++i) modules.push_back(s.LegPath(i));
  }
  for (const Json& item : skip->items()) {
    const std::string& name = item.string_value();
    const bool segments = std::any_of(modules.begin(), modules.end(), [&](const std::string& m) {
      return fmt::format(".{}.", m).find(fmt::format(".{}.", name)) != std::string::npos;
    });
    EXPECT_TRUE(segments) << name;
  }
}

std::string TextConfig(std::string_view extra) {
  return fmt::format(
      R"({{"architectures": ["Qwen3_5MoeForConditionalGeneration"], "text_config": {{
          "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
          "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100,
          "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8,
          "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4 {}}}}})",
      extra);
}

TEST(Qwen3_5, MoeTextConfig) {
  auto r = SitesFromText(TextConfig(R"(, "model_type": "qwen3_5_moe_text", "num_experts": 8,
      "moe_intermediate_size": 16, "shared_expert_intermediate_size": 32)"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string mlp = "model.language_model.layers.0.mlp";
  std::vector<std::string> paths;
  for (const LayerSite& s : r->sites) {
    if (s.path.starts_with(mlp + ".")) paths.push_back(s.path);
  }
  EXPECT_EQ(paths, (std::vector<std::string>{mlp + ".gate", mlp + ".shared_expert_gate",
                                             mlp + ".shared_expert.gate_up_proj",
                                             mlp + ".shared_expert.down_proj", mlp + ".experts"}));
  const LayerSite* gate = r->Find(mlp + ".shared_expert_gate");
  EXPECT_EQ(gate->kind, SiteKind::kRouter);
  EXPECT_EQ(*gate->shape, (std::array<int64_t, 2>{1, 64}));
  EXPECT_EQ(r->Find(mlp + ".experts")->params, 8 * 3 * 64 * 16);
  // No vision_config, no MTP layers: the language model and the head only.
  EXPECT_EQ(r->sites.front().path, "model.language_model.embed_tokens");
  EXPECT_EQ(r->sites.back().path, "lm_head");
  // Without layer_types, every 4th layer is full attention.
  EXPECT_NE(r->Find("model.language_model.layers.3.self_attn.qkv_proj"), nullptr);
  EXPECT_NE(r->Find("model.language_model.layers.2.linear_attn.in_proj_ba"), nullptr);
}

TEST(Qwen3_5, LayerTypeErrors) {
  auto short_list = SitesFromText(TextConfig(R"(, "intermediate_size": 96,
      "layer_types": ["linear_attention", "full_attention"])"));
  ASSERT_FALSE(short_list.ok());
  EXPECT_THAT(short_list.status().message(), HasSubstr("config.json#/text_config/layer_types"));
  auto unknown = SitesFromText(TextConfig(R"(, "intermediate_size": 96,
      "layer_types": ["linear_attention", "sliding_attention", "linear_attention",
                      "full_attention"])"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("layer_types/1"));
  EXPECT_THAT(unknown.status().message(), HasSubstr("\"sliding_attention\""));
}

}  // namespace
}  // namespace quantpath
