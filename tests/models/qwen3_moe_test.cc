// Qwen3MoeForCausalLM: Qwen3-30B-A3B's published config against its published size, the
// producer-written fixtures (tests/data/producers) against the tensors their checkpoints hold, the
// layer rules (mlp_only_layers, decoder_sparse_step, shared expert) and the dialects' lists.
#include <gtest/gtest.h>

#include <algorithm>

#include "fmt/format.h"
#include "quantpath/checkpoint.h"
#include "quantpath/models.h"
#include "tests/models/models_test_util.h"

namespace quantpath {
namespace {

using models_test::Paths;
using models_test::RelativeError;
using models_test::SitesFromText;

// Qwen/Qwen3-30B-A3B's config.json (the fields the sites read), as published.
constexpr std::string_view kQwen3_30bA3b = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
  "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
  "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
  "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
  "attention_bias": false, "tie_word_embeddings": false, "vocab_size": 151936,
  "torch_dtype": "bfloat16"})";

TEST(Qwen3Moe, Qwen3_30bA3bHasItsPublishedSize) {
  auto r = SitesFromText(kQwen3_30bA3b);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  const LayerSite* qkv = m.Find("model.layers.0.self_attn.qkv_proj");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(*qkv->shape, (std::array<int64_t, 2>{(32 + 2 * 4) * 128, 2048}));
  const LayerSite* experts = m.Find("model.layers.47.mlp.experts");
  ASSERT_NE(experts, nullptr);
  EXPECT_EQ(experts->kind, SiteKind::kMoe);
  EXPECT_EQ(experts->experts, 128);
  EXPECT_EQ(*experts->shape, (std::array<int64_t, 2>{768, 2048}));
  EXPECT_EQ(experts->ExpertLegPath(127, 2), "model.layers.47.mlp.experts.127.down_proj");
  EXPECT_EQ(m.Find("model.layers.0.mlp.gate_up_proj"), nullptr);  // every layer is sparse
  // The model card: 30.5B parameters in total.
  EXPECT_LT(RelativeError(m.TotalParams(), 30.5e9), 0.005) << m.TotalParams();
}

// A producer's fixture: the sites' parameters are the elements of the checkpoint's tensors (fp8
// weights hold one element per parameter; their scales are not parameters).
TEST(Qwen3Moe, FixtureSitesCountTheCheckpointsTensors) {
  const std::string dir = std::string(QUANTPATH_TEST_DATA) + "/producers/ct_qwen3moe_fp8_dynamic";
  Result<ConfigSources> sources = ConfigSources::Load(dir);
  ASSERT_TRUE(sources.ok()) << sources.status().message();
  Result<ModelSites> r = BuildModelSites(*sources, *ParseDialect("native"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  Result<Checkpoint> checkpoint = Checkpoint::Open(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().message();
  int64_t elements = 0;
  for (const std::string& name : checkpoint->TensorNames()) {
    Result<TensorView> view = checkpoint->Get(name);
    ASSERT_TRUE(view.ok()) << view.status().message();
    if (!name.ends_with("_scale")) elements += view->info->Elements();
  }
  EXPECT_EQ(r->TotalParams(), elements);
  EXPECT_TRUE(r->warnings.empty()) << r->warnings.front();
  // transformers 5 writes the expert count as num_local_experts.
  EXPECT_EQ(r->Find("model.layers.1.mlp.experts")->experts, 4);
  const std::vector<std::string> expected = {"model.embed_tokens",
                                             "model.layers.0.self_attn.qkv_proj",
                                             "model.layers.0.self_attn.o_proj",
                                             "model.layers.0.self_attn.attn",
                                             "model.layers.0.mlp.gate",
                                             "model.layers.0.mlp.experts",
                                             "model.layers.1.self_attn.qkv_proj",
                                             "model.layers.1.self_attn.o_proj",
                                             "model.layers.1.self_attn.attn",
                                             "model.layers.1.mlp.gate",
                                             "model.layers.1.mlp.experts",
                                             "lm_head"};
  EXPECT_EQ(Paths(*r), expected);
}

std::string SmallConfig(std::string_view extra) {
  return fmt::format(
      R"({{"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 64, "num_hidden_layers": 4,
          "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
          "intermediate_size": 96, "moe_intermediate_size": 32, "num_experts": 8,
          "vocab_size": 100{}}})",
      extra);
}

TEST(Qwen3Moe, DenseLayersFromMlpOnlyLayersAndSparseStep) {
  auto r = SitesFromText(SmallConfig(R"(, "mlp_only_layers": [0], "decoder_sparse_step": 2,
                                         "attention_bias": true)"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  // Layer 0 is listed; layer 2 fails (2 + 1) % 2; layers 1 and 3 are sparse.
  for (int layer : {0, 2}) {
    SCOPED_TRACE(layer);
    const LayerSite* mlp = m.Find(fmt::format("model.layers.{}.mlp.gate_up_proj", layer));
    ASSERT_NE(mlp, nullptr);
    EXPECT_EQ(*mlp->shape, (std::array<int64_t, 2>{2 * 96, 64}));
    EXPECT_EQ(m.Find(fmt::format("model.layers.{}.mlp.experts", layer)), nullptr);
  }
  for (int layer : {1, 3}) {
    SCOPED_TRACE(layer);
    EXPECT_NE(m.Find(fmt::format("model.layers.{}.mlp.experts", layer)), nullptr);
    EXPECT_EQ(m.Find(fmt::format("model.layers.{}.mlp.gate_up_proj", layer)), nullptr);
  }
  // transformers biases o_proj with attention_bias too.
  EXPECT_TRUE(m.Find("model.layers.0.self_attn.qkv_proj")->bias);
  EXPECT_TRUE(m.Find("model.layers.0.self_attn.o_proj")->bias);
}

TEST(Qwen3Moe, SharedExpertWhenTheConfigHasOne) {
  auto r = SitesFromText(SmallConfig(R"(, "shared_expert_intermediate_size": 48)"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::vector<std::string> paths = Paths(*r);
  const auto at = [&](std::string_view path) {
    return std::find(paths.begin(), paths.end(), path) - paths.begin();
  };
  // vLLM's order: router, shared-expert gate, shared expert, experts.
  EXPECT_LT(at("model.layers.0.mlp.gate"), at("model.layers.0.mlp.shared_expert_gate"));
  EXPECT_LT(at("model.layers.0.mlp.shared_expert_gate"),
            at("model.layers.0.mlp.shared_expert.gate_up_proj"));
  EXPECT_LT(at("model.layers.0.mlp.shared_expert.down_proj"), at("model.layers.0.mlp.experts"));
  const LayerSite* shared = r->Find("model.layers.0.mlp.shared_expert.gate_up_proj");
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(*shared->shape, (std::array<int64_t, 2>{2 * 48, 64}));
  EXPECT_EQ(r->Find("model.layers.0.mlp.shared_expert_gate")->kind, SiteKind::kRouter);
}

TEST(Qwen3Moe, EngineListsFollowTheirModelClasses) {
  auto vllm = SitesFromText(SmallConfig(""), "vllm@helpers");
  ASSERT_TRUE(vllm.ok()) << vllm.status().message();
  const std::vector<std::string> vllm_paths = Paths(*vllm);
  // vLLM builds the embedding and the attention module with the quantization config; routers
  // make no call.
  EXPECT_EQ(vllm_paths.front(), "model.embed_tokens");
  EXPECT_NE(vllm->Find("model.layers.0.self_attn.attn"), nullptr);
  EXPECT_EQ(vllm->Find("model.layers.0.mlp.gate"), nullptr);
  EXPECT_NE(vllm->Find("model.layers.0.mlp.experts"), nullptr);

  auto sglang = SitesFromText(SmallConfig(""), "sglang@helpers");
  ASSERT_TRUE(sglang.ok()) << sglang.status().message();
  // SGLang builds the embedding and RadixAttention without one.
  EXPECT_EQ(sglang->Find("model.embed_tokens"), nullptr);
  EXPECT_EQ(sglang->Find("model.layers.0.self_attn.attn"), nullptr);
  EXPECT_EQ(Paths(*sglang).front(), "model.layers.0.self_attn.qkv_proj");
  EXPECT_EQ(Paths(*sglang).back(), "lm_head");
  // Sites the engine does not list still count.
  EXPECT_EQ(sglang->TotalParams(), vllm->TotalParams());
}

TEST(Qwen3Moe, ErrorsNameTheField) {
  auto bad_list = SitesFromText(SmallConfig(R"(, "mlp_only_layers": [1, 9])"));
  ASSERT_FALSE(bad_list.ok());
  EXPECT_NE(bad_list.status().message().find("config.json#/mlp_only_layers/1"), std::string::npos)
      << bad_list.status().message();
  auto no_experts = SitesFromText(
      R"({"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 64, "num_hidden_layers": 1,
          "num_attention_heads": 4, "intermediate_size": 96, "moe_intermediate_size": 32,
          "vocab_size": 100})");
  ASSERT_FALSE(no_experts.ok());
  EXPECT_NE(no_experts.status().message().find("num_local_experts"), std::string::npos)
      << no_experts.status().message();
}

}  // namespace
}  // namespace quantpath
