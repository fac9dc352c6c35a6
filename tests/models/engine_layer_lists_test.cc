// The engines' own layer lists: for vllm@0.33 and sglang@0.5.23 the sites are the modules the
// engine calls get_quant_method for, under the prefix it passes, in construction order. The
// expected lists are written from the engines' model files (vLLM 0.33.0 llama.py, phi.py via the
// Transformers backend, gpt_oss.py, deepseek_v2.py, deepseek_mtp.py, qwen3_5.py; SGLang 0.5.23
// llama.py, phi.py, gpt_oss.py, deepseek_v2.py, deepseek_nextn.py, glm4_moe.py, qwen3_5.py) and
// agree with what both releases built from these corpus configs on the meta device.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "tests/models/models_test_util.h"

namespace quantpath {
namespace {

using models_test::Paths;

constexpr char kLlama[] = "TheBloke__Llama-2-13B-chat-GPTQ";
constexpr char kPhi[] = "KeshavArvindh__phi-2-GPTQ-optimum";
constexpr char kGptOss[] = "openai__gpt-oss-20b";
constexpr char kDeepseek[] = "deepseek-ai__DeepSeek-R1";
constexpr char kKimi[] = "moonshotai__Kimi-K2-Instruct";
constexpr char kGlm[] = "zai-org__GLM-4.5";
constexpr char kBigCode[] = "TheBloke__WizardCoder-15B-1.0-GPTQ";
constexpr char kQwen36[] = "fantasylord__Qwen36";

ModelSites Sites(std::string_view folder, std::string_view dialect, bool speculative = false) {
  Result<ConfigSources> sources =
      ConfigSources::Load(std::string(QUANTPATH_TEST_DATA) + "/corpus/" + std::string(folder));
  EXPECT_TRUE(sources.ok()) << sources.status().message();
  Launch launch;
  launch.speculative = speculative;
  Result<ModelSites> sites = BuildModelSites(*sources, *ParseDialect(dialect), launch);
  EXPECT_TRUE(sites.ok()) << sites.status().message();
  return sites.ok() ? *std::move(sites) : ModelSites{};
}

const LayerSite* FindCheckpoint(const ModelSites& m, std::string_view checkpoint_path) {
  return m.FindCheckpoint(checkpoint_path);
}

TEST(EngineLayerLists, LlamaVllmBuildsEmbedTokensWithoutAPrefix) {
  std::vector<std::string> expected = {""};
  for (int i = 0; i < 40; ++i) {
    for (const char* module : {"self_attn.qkv_proj", "self_attn.o_proj", "self_attn.attn",
                               "mlp.gate_up_proj", "mlp.down_proj"}) {
      expected.push_back(fmt::format("model.layers.{}.{}", i, module));
    }
  }
  expected.push_back("lm_head");
  const ModelSites vllm = Sites(kLlama, "vllm@0.33");
  EXPECT_EQ(Paths(vllm), expected);
  EXPECT_EQ(vllm.sites.front().checkpoint_path, "model.embed_tokens");
  // The same model code in the recorded vLLM dialect.
  EXPECT_EQ(Paths(Sites(kLlama, "vllm@helpers")), expected);
  // SGLang and native name it.
  expected.front() = "model.embed_tokens";
  EXPECT_EQ(Paths(Sites(kLlama, "sglang@0.5.23")), expected);
  EXPECT_EQ(Paths(Sites(kLlama, "native")), expected);
}

TEST(EngineLayerLists, Phi2SglangPassesNoPrefixToLinearLayersAndTheHead) {
  const ModelSites sglang = Sites(kPhi, "sglang@0.5.23");
  std::vector<std::string> expected;
  for (int i = 0; i < 32; ++i) {
    expected.insert(expected.end(),
                    {"", "", fmt::format("model.layers.{}.self_attn.attn", i), "", ""});
  }
  expected.push_back("");  // lm_head; the embedding gets no quantization config
  EXPECT_EQ(Paths(sglang), expected);
  EXPECT_EQ(sglang.sites[0].checkpoint_path, "model.layers.0.self_attn.qkv_proj");
  EXPECT_EQ(sglang.sites[3].checkpoint_path, "model.layers.0.mlp.fc1");
  EXPECT_EQ(sglang.sites.back().checkpoint_path, "lm_head");
  // Its fused qkv_proj has legs, but an empty prefix reaches none of them.
  EXPECT_EQ(sglang.sites[0].LegPath(0), "");
}

TEST(EngineLayerLists, Phi2VllmTransformersBackendBuildsAttentionLast) {
  const std::vector<std::string> paths = Paths(Sites(kPhi, "vllm@0.33"));
  ASSERT_EQ(paths.size(), 1u + 32 * 4 + 32 + 1);
  EXPECT_EQ(paths[0], "model.embed_tokens");
  EXPECT_EQ(paths[1], "model.layers.0.self_attn.qkv_proj");
  EXPECT_EQ(paths[2], "model.layers.0.self_attn.dense");
  EXPECT_EQ(paths[3], "model.layers.0.mlp.fc1");
  EXPECT_EQ(paths[128], "model.layers.31.mlp.fc2");
  EXPECT_EQ(paths[129], "model.layers.0.self_attn.attn");
  EXPECT_EQ(paths[160], "model.layers.31.self_attn.attn");
  EXPECT_EQ(paths.back(), "lm_head");
  // The recorded vLLM dialect has Phi's own model file: attention inside each layer.
  EXPECT_EQ(Paths(Sites(kPhi, "vllm@helpers"))[3], "model.layers.0.self_attn.attn");
}

TEST(EngineLayerLists, GptBigCodeVllmTransformersBackend) {
  const ModelSites vllm = Sites(kBigCode, "vllm@0.33");
  const std::vector<std::string> paths = Paths(vllm);
  ASSERT_EQ(paths.size(), 1u + 40 * 4 + 40 + 1);
  EXPECT_EQ(paths[0], "model.wte");  // wpe stays an nn.Embedding: no call
  EXPECT_EQ(paths[1], "model.h.0.attn.c_attn");
  EXPECT_EQ(paths[4], "model.h.0.mlp.c_proj");
  EXPECT_EQ(paths[161], "model.h.0.attn.attn");
  EXPECT_EQ(paths.back(), "lm_head");
  EXPECT_EQ(vllm.sites[1].checkpoint_path, "transformer.h.0.attn.c_attn");
  EXPECT_EQ(vllm.sites[4].module_class, "ReplicatedLinear");
  // SGLang keeps `transformer.`, gives wte no quantization config and reuses it as the head.
  const std::vector<std::string> sglang = Paths(Sites(kBigCode, "sglang@0.5.23"));
  ASSERT_EQ(sglang.size(), 40u * 5);
  EXPECT_EQ(sglang[0], "transformer.h.0.attn.c_attn");
  EXPECT_EQ(sglang[2], "transformer.h.0.attn.attn");
}

TEST(EngineLayerLists, GptOssNamesAndModulesWithoutAQuantizationConfig) {
  std::vector<std::string> expected;
  for (int i = 0; i < 24; ++i) {
    for (const char* module : {"attn.qkv_proj", "attn.o_proj", "attn.attn", "mlp.experts"}) {
      expected.push_back(fmt::format("model.layers.{}.{}", i, module));
    }
  }
  const ModelSites vllm = Sites(kGptOss, "vllm@0.33");
  EXPECT_EQ(Paths(vllm), expected);  // no embedding, router or head call
  EXPECT_EQ(vllm.sites[0].checkpoint_path, "model.layers.0.self_attn.qkv_proj");
  // SGLang builds the attention block without a quantization config too: experts only.
  std::vector<std::string> experts;
  for (int i = 0; i < 24; ++i) experts.push_back(fmt::format("model.layers.{}.mlp.experts", i));
  EXPECT_EQ(Paths(Sites(kGptOss, "sglang@0.5.23")), experts);
  // Native still lists every site, under the checkpoint's names.
  const ModelSites native = Sites(kGptOss, "native");
  EXPECT_NE(native.Find("model.layers.0.mlp.router"), nullptr);
  EXPECT_NE(native.Find("model.embed_tokens"), nullptr);
}

TEST(EngineLayerLists, DeepseekMtpOnlyWithSpeculativeDecoding) {
  const ModelSites vllm = Sites(kDeepseek, "vllm@0.33");
  EXPECT_EQ(vllm.sites.size(), 487u);
  EXPECT_EQ(vllm.Find("model.layers.61.eh_proj"), nullptr);
  EXPECT_EQ(vllm.Find("model.layers.3.mlp.gate"), nullptr);  // router: no quantization config
  EXPECT_EQ(vllm.sites.back().path, "lm_head");

  // vLLM's DeepSeekMTP: the head (SharedHead gets the layer's prefix) before the decoder block.
  const ModelSites vllm_mtp = Sites(kDeepseek, "vllm@0.33", /*speculative=*/true);
  const std::vector<std::string> mtp_paths = Paths(vllm_mtp);
  ASSERT_EQ(mtp_paths.size(), 496u);
  const std::vector<std::string> tail(mtp_paths.end() - 9, mtp_paths.end());
  EXPECT_EQ(tail,
            (std::vector<std::string>{
                "model.layers.61.head", "model.layers.61.self_attn.fused_qkv_a_proj",
                "model.layers.61.self_attn.q_b_proj", "model.layers.61.self_attn.kv_b_proj",
                "model.layers.61.self_attn.o_proj", "model.layers.61.self_attn.attn",
                "model.layers.61.mlp.shared_experts.gate_up_proj",
                "model.layers.61.mlp.shared_experts.down_proj", "model.layers.61.mlp.experts"}));
  EXPECT_EQ(vllm_mtp.sites[vllm_mtp.sites.size() - 9].checkpoint_path,
            "model.layers.61.shared_head.head");

  // SGLang's NextN draft model: model.decoder.*, then model.shared_head.head.
  const ModelSites sglang_mtp = Sites(kDeepseek, "sglang@0.5.23", /*speculative=*/true);
  const std::vector<std::string> paths = Paths(sglang_mtp);
  EXPECT_EQ(paths.size(), 439u);
  EXPECT_EQ(paths[431], "model.decoder.self_attn.fused_qkv_a_proj_with_mqa");
  EXPECT_EQ(paths[437], "model.decoder.mlp.experts");
  EXPECT_EQ(paths.back(), "model.shared_head.head");
  EXPECT_EQ(sglang_mtp.sites.back().checkpoint_path, "model.layers.61.shared_head.head");
  EXPECT_EQ(sglang_mtp.sites[431].checkpoint_path,
            "model.layers.61.self_attn.fused_qkv_a_proj_with_mqa");
}

TEST(EngineLayerLists, SglangFusesDeepseekSharedExpertsIntoTheRoutedOnes) {
  const ModelSites sglang = Sites(kDeepseek, "sglang@0.5.23");
  EXPECT_EQ(sglang.sites.size(), 431u);
  EXPECT_EQ(sglang.Find("model.layers.3.mlp.shared_experts.gate_up_proj"), nullptr);
  const LayerSite* experts = sglang.Find("model.layers.3.mlp.experts");
  ASSERT_NE(experts, nullptr);
  EXPECT_EQ(experts->experts, 257);                       // 256 routed + the shared one
  EXPECT_EQ(sglang.Find("model.embed_tokens"), nullptr);  // no quantization config
  // Kimi-K2's 384 routed experts fuse only with quark: SGLang builds the shared experts after
  // the routed ones.
  const std::vector<std::string> kimi = Paths(Sites(kKimi, "sglang@0.5.23"));
  auto at = std::find(kimi.begin(), kimi.end(), "model.layers.1.mlp.experts");
  ASSERT_NE(at, kimi.end());
  ASSERT_LT(at + 2, kimi.end());
  EXPECT_EQ(*(at + 1), "model.layers.1.mlp.shared_experts.gate_up_proj");
  EXPECT_EQ(*(at + 2), "model.layers.1.mlp.shared_experts.down_proj");
}

TEST(EngineLayerLists, GlmSglangFusesSharedExpertsAndBuildsAttentionWithoutAConfig) {
  const ModelSites sglang = Sites(kGlm, "sglang@0.5.23");
  EXPECT_EQ(sglang.sites.size(), 280u);
  EXPECT_EQ(sglang.Find("model.layers.0.self_attn.attn"), nullptr);
  EXPECT_EQ(sglang.Find("model.layers.3.mlp.shared_experts.gate_up_proj"), nullptr);
  ASSERT_NE(sglang.Find("model.layers.3.mlp.experts"), nullptr);
  EXPECT_EQ(sglang.Find("model.layers.3.mlp.experts")->experts, 161);
  const ModelSites vllm = Sites(kGlm, "vllm@0.33");
  EXPECT_EQ(vllm.sites.size(), 550u);
  EXPECT_NE(vllm.Find("model.layers.3.mlp.shared_experts.gate_up_proj"), nullptr);
  EXPECT_EQ(vllm.Find("model.embed_tokens"), nullptr);  // vLLM: no quantization config
}

TEST(EngineLayerLists, Qwen3_5Prefixes) {
  const ModelSites vllm = Sites(kQwen36, "vllm@0.33");
  ASSERT_FALSE(vllm.sites.empty());
  EXPECT_EQ(vllm.sites.front().path, "visual.merger.linear_fc1");
  EXPECT_EQ(vllm.sites.front().checkpoint_path, "model.visual.merger.linear_fc1");
  EXPECT_EQ(vllm.sites.back().path, "language_model.lm_head");
  EXPECT_NE(vllm.Find("language_model.model.layers.0.linear_attn.in_proj_qkvz"), nullptr);
  EXPECT_NE(vllm.Find("visual.blocks.0.attn.qkv"), nullptr);
  // conv1d is a layer both engines build without a quantization config: a native site only.
  EXPECT_EQ(vllm.Find("language_model.model.layers.0.linear_attn.conv1d"), nullptr);
  EXPECT_NE(Sites(kQwen36, "native").Find("model.language_model.layers.0.linear_attn.conv1d"),
            nullptr);
  // SGLang passes the checkpoint's language-model prefixes and no vision layer gets a call.
  const ModelSites sglang = Sites(kQwen36, "sglang@0.5.23");
  ASSERT_FALSE(sglang.sites.empty());
  EXPECT_EQ(sglang.sites.front().path, "model.language_model.layers.0.linear_attn.in_proj_qkvz");
  EXPECT_EQ(sglang.sites.back().path, "lm_head");
  for (const LayerSite& site : sglang.sites) EXPECT_FALSE(site.path.starts_with("visual."));
  // With speculative decoding vLLM builds the MTP module under the checkpoint's `mtp.` names and
  // the draft model's own head after it.
  const ModelSites vllm_mtp = Sites(kQwen36, "vllm@0.33", /*speculative=*/true);
  ASSERT_GT(vllm_mtp.sites.size(), vllm.sites.size());
  EXPECT_EQ(vllm_mtp.sites[vllm.sites.size()].path, "mtp.fc");
  EXPECT_EQ(vllm_mtp.sites.back().path, "lm_head");
  EXPECT_EQ(vllm_mtp.sites.back().params, 0);
}

// The weights of modules an engine does not list still belong to the checkpoint.
TEST(EngineLayerLists, TotalsDoNotDependOnTheDialect) {
  for (const char* folder : {kLlama, kPhi, kGptOss, kDeepseek, kGlm, kBigCode, kQwen36}) {
    const int64_t native = Sites(folder, "native").TotalParams();
    for (const char* dialect : {"vllm@helpers", "sglang@helpers", "vllm@0.33", "sglang@0.5.23"}) {
      for (bool speculative : {false, true}) {
        EXPECT_EQ(Sites(folder, dialect, speculative).TotalParams(), native)
            << folder << " " << dialect << (speculative ? " --speculative" : "");
      }
    }
  }
}

std::vector<std::string> OtherNames(const ModelSites& m) {
  std::vector<std::string> names;
  for (const OtherTensor& t : m.other_tensors) names.push_back(t.name);
  return names;
}

// An MTP layer the engine does not build is a skipped module: its tensors of no site leave
// other_tensors with its sites (its weights stay in other_params, TotalsDoNotDependOnTheDialect),
// and come back with speculative decoding.
TEST(EngineLayerLists, MtpLayersTheEngineDoesNotBuildAreSkippedModules) {
  struct Case {
    const char* folder;
    std::string module;
  };
  for (const Case& c :
       {Case{kDeepseek, "model.layers.61"}, Case{kGlm, "model.layers.92"}, Case{kQwen36, "mtp"}}) {
    SCOPED_TRACE(c.folder);
    const ModelSites native = Sites(c.folder, "native");
    EXPECT_TRUE(native.skipped_modules.empty());
    std::vector<std::string> outside;  // native's other tensors outside the MTP module
    for (const std::string& name : OtherNames(native)) {
      if (!name.starts_with(c.module + ".")) outside.push_back(name);
    }
    // Its norms (DeepSeek's and GLM's MTP layers add their router's bias).
    EXPECT_GE(OtherNames(native).size() - outside.size(), 3u);
    for (const char* dialect : {"vllm@helpers", "sglang@helpers", "vllm@0.33", "sglang@0.5.23"}) {
      SCOPED_TRACE(dialect);
      const ModelSites engine = Sites(c.folder, dialect);
      EXPECT_EQ(engine.skipped_modules, std::vector<std::string>{c.module});
      EXPECT_EQ(OtherNames(engine), outside);
      // In the engine's construction order (vLLM builds DeepSeekMTP's shared head, and its norm,
      // before the decoder block).
      const ModelSites speculative = Sites(c.folder, dialect, /*speculative=*/true);
      EXPECT_TRUE(speculative.skipped_modules.empty());
      std::vector<std::string> built = OtherNames(speculative);
      std::vector<std::string> all = OtherNames(native);
      std::sort(built.begin(), built.end());
      std::sort(all.begin(), all.end());
      EXPECT_EQ(built, all);
    }
  }
  EXPECT_TRUE(Sites(kKimi, "vllm@0.33").skipped_modules.empty());  // num_nextn_predict_layers 0
}

TEST(EngineLayerLists, NativeAlwaysListsMtpAndEveryRowHasACheckpointPath) {
  const ModelSites native = Sites(kDeepseek, "native");
  EXPECT_NE(native.Find("model.layers.61.eh_proj"), nullptr);
  EXPECT_NE(native.Find("model.layers.61.shared_head.head"), nullptr);
  for (const char* dialect : {"native", "vllm@0.33", "sglang@0.5.23"}) {
    for (const LayerSite& site : Sites(kDeepseek, dialect, true).sites) {
      EXPECT_FALSE(site.checkpoint_path.empty()) << dialect << " " << site.path;
    }
  }
  EXPECT_EQ(FindCheckpoint(Sites(kLlama, "vllm@0.33"), "model.embed_tokens")->path, "");
}

}  // namespace
}  // namespace quantpath
