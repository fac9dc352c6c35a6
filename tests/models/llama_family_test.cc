// Llama, Qwen2 and Qwen3 sites: order, names, legs and parameter counts of small synthetic configs,
// with every expected number computed here from the config's own fields.
#include <gtest/gtest.h>

#include "fmt/format.h"
#include "quantpath/models.h"
#include "tests/models/models_test_util.h"

namespace quantpath {
namespace {

using models_test::Paths;
using models_test::SitesFromText;

// The fields of a synthetic config; the JSON is written from them and the expectations are
// computed from them.
struct Dims {
  int64_t hidden = 64;
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t head_dim = 0;  // 0: not written (hidden / heads applies)
  int64_t intermediate = 96;
  int64_t vocab = 100;
  bool tied = false;

  int64_t HeadDim() const { return head_dim ? head_dim : hidden / heads; }
};

std::string Config(std::string_view arch, const Dims& d, std::string_view extra = "") {
  std::string head_dim = d.head_dim ? fmt::format(R"("head_dim": {},)", d.head_dim) : "";
  return fmt::format(
      R"({{"architectures": ["{}"], "hidden_size": {}, "num_hidden_layers": {},
          "num_attention_heads": {}, "num_key_value_heads": {}, {} "intermediate_size": {},
          "vocab_size": {}, "tie_word_embeddings": {}, "torch_dtype": "float16" {}}})",
      arch, d.hidden, d.layers, d.heads, d.kv_heads, head_dim, d.intermediate, d.vocab,
      d.tied ? "true" : "false", extra);
}

std::vector<std::string> ExpectedPaths(int64_t layers) {
  std::vector<std::string> paths = {"model.embed_tokens"};
  for (int64_t i = 0; i < layers; ++i) {
    for (const char* name : {"self_attn.qkv_proj", "self_attn.o_proj", "self_attn.attn",
                             "mlp.gate_up_proj", "mlp.down_proj"}) {
      paths.push_back(fmt::format("model.layers.{}.{}", i, name));
    }
  }
  paths.push_back("lm_head");
  return paths;
}

TEST(LlamaFamily, LlamaSitesInConstructionOrder) {
  Dims d;
  auto r = SitesFromText(Config("LlamaForCausalLM", d));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  EXPECT_EQ(m.architecture, "LlamaForCausalLM");
  EXPECT_EQ(m.torch_dtype, QDType::kFP16);
  EXPECT_EQ(Paths(m), ExpectedPaths(d.layers));

  const int64_t hd = d.HeadDim();
  const LayerSite* qkv = m.Find("model.layers.1.self_attn.qkv_proj");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->kind, SiteKind::kLinear);
  EXPECT_EQ(qkv->module_class, "QKVParallelLinear");
  ASSERT_EQ(qkv->legs.size(), 3u);
  EXPECT_EQ(qkv->legs[0].name, "q_proj");
  EXPECT_EQ(qkv->legs[0].rows, d.heads * hd);
  EXPECT_EQ(qkv->legs[1].name, "k_proj");
  EXPECT_EQ(qkv->legs[1].rows, d.kv_heads * hd);
  EXPECT_EQ(qkv->legs[2].name, "v_proj");
  EXPECT_EQ(qkv->legs[2].rows, d.kv_heads * hd);
  ASSERT_TRUE(qkv->shape.has_value());
  EXPECT_EQ((*qkv->shape)[0], (d.heads + 2 * d.kv_heads) * hd);
  EXPECT_EQ((*qkv->shape)[1], d.hidden);
  EXPECT_FALSE(qkv->bias);
  EXPECT_EQ(qkv->LegPath(1), "model.layers.1.self_attn.k_proj");
  EXPECT_EQ(qkv->LegPath(3), "");

  const LayerSite* o = m.Find("model.layers.0.self_attn.o_proj");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->module_class, "RowParallelLinear");
  EXPECT_EQ(o->params, d.hidden * d.heads * hd);

  const LayerSite* attn = m.Find("model.layers.0.self_attn.attn");
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(attn->kind, SiteKind::kAttention);
  EXPECT_EQ(attn->module_class, "Attention");
  EXPECT_FALSE(attn->shape.has_value());
  EXPECT_EQ(attn->params, 0);

  const LayerSite* gate_up = m.Find("model.layers.0.mlp.gate_up_proj");
  ASSERT_NE(gate_up, nullptr);
  EXPECT_EQ(gate_up->module_class, "MergedColumnParallelLinear");
  ASSERT_EQ(gate_up->legs.size(), 2u);
  EXPECT_EQ(gate_up->legs[0].name, "gate_proj");
  EXPECT_EQ(gate_up->legs[1].name, "up_proj");
  EXPECT_EQ(gate_up->legs[1].rows, d.intermediate);
  EXPECT_EQ(gate_up->params, 2 * d.intermediate * d.hidden);

  EXPECT_EQ(m.Find("model.embed_tokens")->kind, SiteKind::kEmbedding);
  EXPECT_EQ(m.Find("lm_head")->kind, SiteKind::kLmHead);
  EXPECT_EQ(m.Find("lm_head")->module_class, "ParallelLMHead");
  EXPECT_EQ(m.Find("model.layers.0.self_attn.q_proj"), nullptr);

  const int64_t per_layer = (d.heads + 2 * d.kv_heads) * hd * d.hidden +  // qkv_proj
                            d.hidden * d.heads * hd +                     // o_proj
                            3 * d.hidden * d.intermediate;                // gate, up, down
  EXPECT_EQ(m.SiteParams(), d.layers * per_layer + 2 * d.vocab * d.hidden);
  // input_layernorm + post_attention_layernorm per layer, and model.norm.
  EXPECT_EQ(m.other_params, d.layers * 2 * d.hidden + d.hidden);
  EXPECT_EQ(m.TotalParams(), m.SiteParams() + m.other_params);

  ASSERT_EQ(m.packed_modules_mapping.size(), 2u);
  EXPECT_EQ(m.packed_modules_mapping[0].first, "qkv_proj");
  EXPECT_EQ(m.packed_modules_mapping[0].second,
            (std::vector<std::string>{"q_proj", "k_proj", "v_proj"}));
  EXPECT_EQ(m.packed_modules_mapping[1].first, "gate_up_proj");
  for (const LayerSite& s : m.sites) EXPECT_FALSE(s.mtp) << s.path;
}

TEST(LlamaFamily, LlamaBiasesFollowConfigFields) {
  Dims d;
  auto r =
      SitesFromText(Config("LlamaForCausalLM", d, R"(, "attention_bias": true, "mlp_bias": true)"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const int64_t hd = d.HeadDim();
  const int64_t qkv_rows = (d.heads + 2 * d.kv_heads) * hd;
  const LayerSite* qkv = r->Find("model.layers.0.self_attn.qkv_proj");
  EXPECT_TRUE(qkv->bias);
  EXPECT_EQ(qkv->params, qkv_rows * d.hidden + qkv_rows);
  EXPECT_EQ(r->Find("model.layers.0.self_attn.o_proj")->params, d.hidden * d.heads * hd + d.hidden);
  EXPECT_EQ(r->Find("model.layers.0.mlp.down_proj")->params, d.hidden * d.intermediate + d.hidden);

  // The older `bias` spelling counts as attention_bias for Llama.
  auto legacy = SitesFromText(Config("LlamaForCausalLM", d, R"(, "bias": true)"));
  ASSERT_TRUE(legacy.ok()) << legacy.status().message();
  EXPECT_TRUE(legacy->Find("model.layers.0.self_attn.qkv_proj")->bias);
}

TEST(LlamaFamily, TiedHeadIsASiteWithoutParams) {
  Dims d;
  d.tied = true;
  auto r = SitesFromText(Config("LlamaForCausalLM", d));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const LayerSite* head = r->Find("lm_head");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->params, 0);
  ASSERT_TRUE(head->shape.has_value());
  EXPECT_EQ((*head->shape)[0], d.vocab);
  EXPECT_EQ(r->Find("model.embed_tokens")->params, d.vocab * d.hidden);
}

TEST(LlamaFamily, Qwen2CountsQkvBiasOnly) {
  Dims d;
  d.layers = 3;
  auto r = SitesFromText(Config("Qwen2ForCausalLM", d));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  EXPECT_EQ(Paths(m), ExpectedPaths(d.layers));
  const int64_t hd = d.HeadDim();
  const int64_t qkv_rows = (d.heads + 2 * d.kv_heads) * hd;
  const LayerSite* qkv = m.Find("model.layers.2.self_attn.qkv_proj");
  EXPECT_TRUE(qkv->bias);
  EXPECT_EQ(qkv->params, qkv_rows * d.hidden + qkv_rows);
  const LayerSite* o = m.Find("model.layers.2.self_attn.o_proj");
  EXPECT_FALSE(o->bias);
  EXPECT_EQ(o->params, d.hidden * d.heads * hd);
  const int64_t per_layer =
      qkv_rows * d.hidden + qkv_rows + d.hidden * d.heads * hd + 3 * d.hidden * d.intermediate;
  EXPECT_EQ(m.SiteParams(), d.layers * per_layer + 2 * d.vocab * d.hidden);
  EXPECT_EQ(m.other_params, d.layers * 2 * d.hidden + d.hidden);
}

TEST(LlamaFamily, Qwen3HeadDimAndQkNorms) {
  Dims d;
  d.head_dim = 32;  // differs from hidden / heads = 16, as Qwen3 configs allow
  auto r = SitesFromText(Config("Qwen3ForCausalLM", d));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  EXPECT_EQ(Paths(m), ExpectedPaths(d.layers));
  const LayerSite* qkv = m.Find("model.layers.0.self_attn.qkv_proj");
  EXPECT_FALSE(qkv->bias);
  EXPECT_EQ(qkv->legs[0].rows, d.heads * d.head_dim);
  EXPECT_EQ(qkv->legs[1].rows, d.kv_heads * d.head_dim);
  const LayerSite* o = m.Find("model.layers.0.self_attn.o_proj");
  EXPECT_EQ((*o->shape)[1], d.heads * d.head_dim);
  // q_norm and k_norm hold head_dim weights each, per layer.
  EXPECT_EQ(m.other_params, d.layers * (2 * d.hidden + 2 * d.head_dim) + d.hidden);
}

TEST(LlamaFamily, SglangUsesRadixAttention) {
  auto r = SitesFromText(Config("Qwen3ForCausalLM", Dims{}), "sglang@helpers");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Find("model.layers.0.self_attn.attn")->module_class, "RadixAttention");
  EXPECT_EQ(Paths(*r), ExpectedPaths(Dims{}.layers));
}

TEST(LlamaFamily, KvHeadsDefaultToHeads) {
  Dims d;
  std::string text = Config("LlamaForCausalLM", d);
  // Drop num_key_value_heads: multi-head attention.
  text.replace(text.find(R"("num_key_value_heads")"),
               std::string(R"("num_key_value_heads": 2,)").size(), "");
  auto r = SitesFromText(text);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Find("model.layers.0.self_attn.qkv_proj")->legs[1].rows, d.hidden);
}

}  // namespace
}  // namespace quantpath
