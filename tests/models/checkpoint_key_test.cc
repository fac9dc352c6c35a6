// LayerSite::CheckpointKey: the same module gets the same key under every dialect, however the
// dialect names it, and the key is made of names the checkpoint itself uses (checked against the
// copied checkpoint indexes of tests/data/corpus).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "quantpath/models.h"
#include "tests/models/models_test_util.h"

namespace quantpath {
namespace {

using models_test::IndexTensorNames;
using models_test::SitesFromCorpus;

// key → the execution paths that share it, for one dialect.
std::map<std::string, std::vector<std::string>> KeysOf(const ModelSites& m) {
  std::map<std::string, std::vector<std::string>> keys;
  for (const LayerSite& s : m.sites) keys[s.CheckpointKey()].push_back(s.path);
  return keys;
}

const LayerSite& SiteAt(const ModelSites& m, std::string_view path) {
  const LayerSite* site = m.Find(path);
  EXPECT_NE(site, nullptr) << path;
  static const LayerSite kNone;
  return site != nullptr ? *site : kNone;
}

// vLLM's fused_qkv_a_proj and SGLang's fused_qkv_a_proj_with_mqa are one module: q_a_proj and
// kv_a_proj_with_mqa of the checkpoint. vLLM's one MLA attention module and SGLang's two share
// their parent's key.
TEST(CheckpointKey, DeepseekR1AlignsMlaNamesAcrossDialects) {
  auto native = SitesFromCorpus("deepseek-ai__DeepSeek-R1", "native");
  auto sglang = SitesFromCorpus("deepseek-ai__DeepSeek-R1", "sglang@helpers");
  ASSERT_TRUE(native.ok() && sglang.ok());
  const std::string fused = "model.layers.0.self_attn.{q_a_proj+kv_a_proj_with_mqa}";
  EXPECT_EQ(SiteAt(*native, "model.layers.0.self_attn.fused_qkv_a_proj").CheckpointKey(), fused);
  EXPECT_EQ(SiteAt(*sglang, "model.layers.0.self_attn.fused_qkv_a_proj_with_mqa").CheckpointKey(),
            fused);
  const std::string attention = "model.layers.0.self_attn.<attention>";
  EXPECT_EQ(SiteAt(*native, "model.layers.0.self_attn.attn").CheckpointKey(), attention);
  EXPECT_EQ(SiteAt(*sglang, "model.layers.0.self_attn.attn_mqa").CheckpointKey(), attention);
  EXPECT_EQ(SiteAt(*sglang, "model.layers.0.self_attn.attn_mha").CheckpointKey(), attention);
  // Experts by the module that holds them; other sites by their path.
  EXPECT_EQ(SiteAt(*native, "model.layers.3.mlp.experts").CheckpointKey(),
            "model.layers.3.mlp.experts");
  EXPECT_EQ(SiteAt(*native, "model.layers.3.mlp.gate").CheckpointKey(), "model.layers.3.mlp.gate");
  EXPECT_EQ(SiteAt(*native, "model.layers.0.mlp.gate_up_proj").CheckpointKey(),
            "model.layers.0.mlp.{gate_proj+up_proj}");
}

// vLLM builds gpt-oss's attention block as `attn` (checkpoint `self_attn`): its sites keep the
// checkpoint's name and key. The router gets no quantization config in either engine, so only
// native lists it.
TEST(CheckpointKey, GptOssKeysUseTheCheckpointNames) {
  auto vllm = SitesFromCorpus("openai__gpt-oss-20b", "vllm@0.33");
  auto native = SitesFromCorpus("openai__gpt-oss-20b", "native");
  ASSERT_TRUE(vllm.ok() && native.ok()) << vllm.status().message();
  const LayerSite& qkv = SiteAt(*vllm, "model.layers.5.attn.qkv_proj");
  EXPECT_EQ(qkv.checkpoint_path, "model.layers.5.self_attn.qkv_proj");
  EXPECT_EQ(qkv.CheckpointKey(), "model.layers.5.self_attn.{q_proj+k_proj+v_proj}");
  EXPECT_EQ(SiteAt(*vllm, "model.layers.5.attn.attn").CheckpointKey(),
            "model.layers.5.self_attn.<attention>");
  EXPECT_EQ(SiteAt(*native, "model.layers.5.self_attn.attn").CheckpointKey(),
            "model.layers.5.self_attn.<attention>");
  EXPECT_EQ(vllm->Find("model.layers.5.mlp.router"), nullptr);
  EXPECT_EQ(SiteAt(*native, "model.layers.5.mlp.router").checkpoint_path,
            "model.layers.5.mlp.router");
}

// Every key of every dialect names tensors of the checkpoint index: `<key>.weight` for a plain
// site, `<parent>.<leg>.weight` for each leg of a fused one, and the experts' tensors under an moe
// key (gpt-oss stores them as `<key>.<leg>_blocks`, MLX and the others as `<key>.<e>.<leg>`).
TEST(CheckpointKey, KeysNameCheckpointTensors) {
  for (const char* folder : {"openai__gpt-oss-20b", "Qwen__Qwen3-14B-MLX-4bit"}) {
    auto names = IndexTensorNames(folder);
    ASSERT_TRUE(names.ok()) << names.status().message();
    const std::set<std::string> tensors(names->begin(), names->end());
    auto has_prefix = [&](const std::string& prefix) {
      auto it = tensors.lower_bound(prefix);
      return it != tensors.end() && it->starts_with(prefix);
    };
    for (std::string_view dialect : DialectNames()) {
      auto m = SitesFromCorpus(folder, dialect);
      ASSERT_TRUE(m.ok()) << m.status().message();
      size_t checked = 0;
      for (const LayerSite& s : m->sites) {
        const std::string key = s.CheckpointKey();
        if (s.kind == SiteKind::kAttention) {
          EXPECT_TRUE(has_prefix(std::string(ParentPath(key)) + ".")) << folder << " " << key;
        } else if (s.kind == SiteKind::kMoe) {
          EXPECT_TRUE(has_prefix(key + ".")) << folder << " " << key;
        } else if (s.legs.empty()) {
          // A tied head stores no weight of its own.
          if (s.kind == SiteKind::kLmHead && s.params == 0) continue;
          EXPECT_TRUE(tensors.contains(key + ".weight")) << folder << " " << dialect << " " << key;
        } else {
          for (const Leg& leg : s.legs) {
            const std::string tensor =
                std::string(ParentPath(s.checkpoint_path.empty() ? s.path : s.checkpoint_path)) +
                "." + leg.name + ".weight";
            EXPECT_TRUE(tensors.contains(tensor)) << folder << " " << key << ": " << tensor;
          }
        }
        ++checked;
      }
      // SGLang lists gpt-oss's 24 experts only.
      EXPECT_GE(checked, 24u) << folder << " " << dialect;
    }
  }
}

// Across the whole corpus, every key an engine dialect builds is one of native's (an engine lists
// the subset it calls get_quant_method for, MTP layers only with --speculative), and within one
// dialect only attention modules share a key (SGLang's MLA builds two).
TEST(CheckpointKey, EveryDialectBuildsTheSameKeys) {
  int folders = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(QUANTPATH_TEST_DATA) + "/corpus")) {
    if (!entry.is_directory()) continue;
    const std::string folder = entry.path().filename().string();
    auto native = SitesFromCorpus(folder, "native");
    if (!native.ok()) continue;  // architectures the corpus holds only to be rejected
    ++folders;
    const auto native_keys = KeysOf(*native);
    for (std::string_view dialect : DialectNames()) {
      auto m = SitesFromCorpus(folder, dialect);
      ASSERT_TRUE(m.ok()) << folder << " " << dialect << ": " << m.status().message();
      const auto keys = KeysOf(*m);
      std::vector<std::string> only_here;
      for (const auto& [key, paths] : keys) {
        if (!native_keys.contains(key)) only_here.push_back(key);
        if (paths.size() > 1 && !key.ends_with(".<attention>")) {
          ADD_FAILURE() << folder << " " << dialect << ": " << Join(paths, ", ") << " share "
                        << key;
        }
      }
      EXPECT_TRUE(only_here.empty()) << folder << " " << dialect << ": " << Join(only_here, ", ");
      EXPECT_FALSE(keys.empty()) << folder << " " << dialect;
    }
  }
  EXPECT_GT(folders, 20);
}

}  // namespace
}  // namespace quantpath
