// The tensor-parallel style the models stage gives each site: read from its engine class
// (TpStyleOf), the one place a class name says how a site splits (vLLM 0.33 / SGLang 0.5.23
// linear.py).
#include <gtest/gtest.h>

#include <string>

#include "quantpath/models.h"
#include "tests/models/models_test_util.h"

namespace quantpath {
namespace {

using models_test::SitesFromCorpus;

constexpr TpStyle kNone;
constexpr TpStyle kRow{Parallel::kRow, false, false};
constexpr TpStyle kColumn{Parallel::kColumn, false, false};
constexpr TpStyle kMergedColumn{Parallel::kColumn, true, false};
constexpr TpStyle kQkvColumn{Parallel::kColumn, true, true};
constexpr TpStyle kReplicated{Parallel::kReplicated, false, false};

const LayerSite& SiteAt(const ModelSites& m, std::string_view path) {
  const LayerSite* site = m.Find(path);
  EXPECT_NE(site, nullptr) << path;
  static const LayerSite kMissing;
  return site != nullptr ? *site : kMissing;
}

TEST(TpStyle, EngineClasses) {
  EXPECT_EQ(TpStyleOf("RowParallelLinear"), kRow);
  EXPECT_EQ(TpStyleOf("ColumnParallelLinear"), kColumn);
  EXPECT_EQ(TpStyleOf("MergedColumnParallelLinear"), kMergedColumn);
  EXPECT_EQ(TpStyleOf("QKVParallelLinear"), kQkvColumn);
  EXPECT_EQ(TpStyleOf("ReplicatedLinear"), kReplicated);
  // A merged replicated class keeps its legs' partitions, never split.
  EXPECT_EQ(TpStyleOf("MergedReplicatedLinear"), (TpStyle{Parallel::kReplicated, true, false}));
  // Classes no linear split places: the LM head (split by its kind where a layer loads), experts,
  // attention, embeddings, transformers' nn.Linear, vLLM's fused MLA projection, none at all.
  for (const char* cls : {"ParallelLMHead", "VocabParallelEmbedding", "FusedMoE", "Attention",
                          "RadixAttention", "Linear", "DeepSeekV2FusedQkvAProjLinear", ""}) {
    EXPECT_EQ(TpStyleOf(cls), kNone) << cls;
  }
}

TEST(TpStyle, LlamaSites) {
  for (const char* dialect : {"native", "vllm@0.33", "sglang@0.5.23"}) {
    SCOPED_TRACE(dialect);
    auto m = SitesFromCorpus("TheBloke__Llama-2-13B-chat-GPTQ", dialect);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(SiteAt(*m, "model.layers.0.self_attn.qkv_proj").tp_style, kQkvColumn);
    EXPECT_EQ(SiteAt(*m, "model.layers.0.self_attn.o_proj").tp_style, kRow);
    EXPECT_EQ(SiteAt(*m, "model.layers.0.mlp.gate_up_proj").tp_style, kMergedColumn);
    EXPECT_EQ(SiteAt(*m, "model.layers.0.mlp.down_proj").tp_style, kRow);
    // ParallelLMHead is no linear class: the loader splits the vocabulary by the site's kind.
    EXPECT_EQ(SiteAt(*m, "lm_head").tp_style, kNone);
  }
}

// vLLM fuses DeepSeek's q_a_proj and kv_a_proj_with_mqa into a merged column class; SGLang into
// one ReplicatedLinear, a single partition on every rank.
TEST(TpStyle, DeepseekFusedQkvAProjByEngine) {
  auto vllm = SitesFromCorpus("deepseek-ai__DeepSeek-R1", "vllm@0.33");
  auto sglang = SitesFromCorpus("deepseek-ai__DeepSeek-R1", "sglang@0.5.23");
  auto native = SitesFromCorpus("deepseek-ai__DeepSeek-R1", "native");
  ASSERT_TRUE(vllm.ok() && sglang.ok() && native.ok());
  EXPECT_EQ(SiteAt(*vllm, "model.layers.0.self_attn.fused_qkv_a_proj").tp_style, kMergedColumn);
  EXPECT_EQ(SiteAt(*sglang, "model.layers.0.self_attn.fused_qkv_a_proj_with_mqa").tp_style,
            kReplicated);
  EXPECT_EQ(SiteAt(*sglang, "model.layers.0.self_attn.kv_b_proj").tp_style, kColumn);
  EXPECT_EQ(SiteAt(*sglang, "model.layers.3.mlp.experts").tp_style, kNone);
  EXPECT_EQ(SiteAt(*native, "model.layers.3.mlp.gate").tp_style, kReplicated);  // the router
}

// Every site carries its class's style, whichever builder made it.
TEST(TpStyle, EverySiteCarriesItsClassStyle) {
  for (const char* folder : {"TheBloke__Llama-2-13B-chat-GPTQ", "deepseek-ai__DeepSeek-R1",
                             "openai__gpt-oss-20b", "fantasylord__Qwen36",
                             "TheBloke__WizardCoder-15B-1.0-GPTQ", "reubzdubz__Molmo7B_D_NF4Quant",
                             "Qwen__Qwen-VL-Chat-Int4", "KeshavArvindh__phi-2-GPTQ-optimum"}) {
    for (const char* dialect :
         {"native", "vllm@helpers", "vllm@0.33", "sglang@helpers", "sglang@0.5.23"}) {
      auto m = SitesFromCorpus(folder, dialect);
      ASSERT_TRUE(m.ok()) << folder << " " << dialect << ": " << m.status().message();
      for (const LayerSite& s : m->sites) {
        EXPECT_EQ(s.tp_style, TpStyleOf(s.module_class))
            << folder << " " << dialect << " " << s.path << " (" << s.module_class << ")";
      }
    }
  }
  // Sites inferred from tensor names are transformers' nn.Linear and nn.Embedding.
  Result<ConfigSources> sources =
      ConfigSources::Load(std::string(QUANTPATH_TEST_DATA) + "/models/unknown-arch-qwen3-14b-mlx");
  ASSERT_TRUE(sources.ok()) << sources.status().message();
  Result<ModelSites> inferred = BuildModelSites(*sources, *ParseDialect("native"));
  ASSERT_TRUE(inferred.ok()) << inferred.status().message();
  ASSERT_FALSE(inferred->sites.empty());
  for (const LayerSite& s : inferred->sites) EXPECT_EQ(s.tp_style, kNone) << s.path;
}

}  // namespace
}  // namespace quantpath
