// The description linted against the model: entries of exclusion and target lists that match no
// module under native and the engines' newest releases, on producer fixtures whose config the
// test patches.
#include "quantpath/pipeline/lint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "quantpath/pipeline.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

using testing::FreshDir;

const std::vector<std::string> kAll = {"native", "vllm@0.34", "sglang@0.5.23"};

// A copy of the producer folder `name` whose quantization_config has `key` set to `entries`.
std::filesystem::path WithEntries(const std::string& name, const std::string& key,
                                  const std::vector<std::string>& entries) {
  const std::filesystem::path dir = FreshDir();
  std::filesystem::copy(std::filesystem::path(QUANTPATH_TEST_DATA) / "producers" / name, dir);
  Result<Json> config = ReadJsonFile(dir / "config.json");
  EXPECT_TRUE(config.ok());
  Json list = Json::Array();
  for (const std::string& e : entries) list.mutable_items().push_back(Json::String(e));
  for (auto& [k, v] : config->mutable_members()) {
    if (k != "quantization_config") continue;
    bool set = false;
    for (auto& [qk, qv] : v.mutable_members()) {
      if (qk == key) {
        qv = list;
        set = true;
      }
    }
    if (!set) v.mutable_members().emplace_back(key, list);
  }
  EXPECT_TRUE(WriteFileAtomically(dir / "config.json", ToJson(*config, 1)).ok());
  return dir;
}

std::vector<UnmatchedEntry> Lint(const std::filesystem::path& dir) {
  Result<OpenOptions> options = OpenOptions::Parse("native", "", "cpu", "auto", 1, false, "cuda");
  EXPECT_TRUE(options.ok());
  Result<std::vector<UnmatchedEntry>> entries = UnmatchedEntries(dir.string(), *options);
  EXPECT_TRUE(entries.ok()) << entries.status().message();
  return entries.ok() ? *entries : std::vector<UnmatchedEntry>();
}

// compressed-tensors `ignore`: a stale layer, a regex that matches nothing and a typo, under the
// three dialects that read it; the entries that match are not reported, and the suggestions are
// the nearest module names.
TEST(Lint, CompressedTensorsIgnoreEntriesThatMatchNothing) {
  const auto dir = WithEntries("ct_llama_w4a16_g64_sym", "ignore",
                               {"lm_head", "model.layers.9.mlp.down_proj", "re:.*mlp\\.gatee$",
                                "lm_heda", "re:.*self_attn.*"});
  const std::vector<UnmatchedEntry> unmatched = Lint(dir);
  ASSERT_EQ(unmatched.size(), 3u);
  EXPECT_EQ(unmatched[0].entry, "model.layers.9.mlp.down_proj");
  EXPECT_EQ(unmatched[0].where.ToString(), "config.json#/quantization_config/ignore/1");
  EXPECT_EQ(unmatched[0].dialects, kAll);
  ASSERT_FALSE(unmatched[0].suggestions.empty());
  EXPECT_EQ(unmatched[0].suggestions[0], "model.layers.0.mlp.down_proj");
  EXPECT_EQ(unmatched[1].entry, "re:.*mlp\\.gatee$");
  EXPECT_EQ(unmatched[1].where.pointer, "/quantization_config/ignore/2");
  EXPECT_EQ(unmatched[2].entry, "lm_heda");
  EXPECT_EQ(unmatched[2].suggestions, (std::vector<std::string>{"lm_head"}));
  EXPECT_EQ(UnmatchedEntryText(unmatched[2]),
            "config.json#/quantization_config/ignore/3: \"lm_heda\" matches no module under "
            "native, vllm@0.34, sglang@0.5.23; nearest: lm_head");
}

// The dialects' matchers differ: for fp8 `ignored_layers`, SGLang and native match dotted module
// paths (a path suffix too), vLLM whole names only. A parent module's name is a module of the
// model, whichever dialect.
TEST(Lint, Fp8IgnoredLayersPerDialect) {
  std::filesystem::path dir = FreshDir();
  std::filesystem::copy(std::filesystem::path(QUANTPATH_SOURCE_DIR) / "examples" / "llama-tiny-fp8",
                        dir);
  Result<Json> config = ReadJsonFile(dir / "config.json");
  ASSERT_TRUE(config.ok());
  Json list = Json::Array();
  for (const char* e : {"model.layers.0.self_attn", "layers.1.mlp.down_proj", "mlp.down",
                        "model.layers.1.mlp.down_proj"}) {
    list.mutable_items().push_back(Json::String(e));
  }
  for (auto& [k, v] : config->mutable_members()) {
    if (k == "quantization_config") v.mutable_members().emplace_back("ignored_layers", list);
  }
  ASSERT_TRUE(WriteFileAtomically(dir / "config.json", ToJson(*config, 1)).ok());
  const std::vector<UnmatchedEntry> unmatched = Lint(dir);
  ASSERT_EQ(unmatched.size(), 2u);
  EXPECT_EQ(unmatched[0].entry, "layers.1.mlp.down_proj");
  EXPECT_EQ(unmatched[0].dialects, (std::vector<std::string>{"vllm@0.34"}));
  EXPECT_EQ(unmatched[1].entry, "mlp.down");
  EXPECT_EQ(unmatched[1].dialects, kAll);
}

// Every entry of a real producer's config matches: nothing to report.
// ModelSlim's description names every weight by a key: a key of a layer the model does not have
// is an entry that matches nothing (SGLang and native read the description; vLLM does not).
TEST(Lint, ModelSlimKeysOfModulesTheModelLacks) {
  const std::filesystem::path dir = FreshDir();
  std::filesystem::copy(
      std::filesystem::path(QUANTPATH_TEST_DATA) / "documented" / "modelslim_llama_w8a8", dir);
  Result<Json> description = ReadJsonFile(dir / "quant_model_description.json");
  ASSERT_TRUE(description.ok());
  description->mutable_members().emplace_back("model.layers.7.self_attn.q_proj.weight",
                                              Json::String("W8A8"));
  ASSERT_TRUE(
      WriteFileAtomically(dir / "quant_model_description.json", ToJson(*description, 1)).ok());
  const std::vector<UnmatchedEntry> unmatched = Lint(dir);
  ASSERT_EQ(unmatched.size(), 1u);
  EXPECT_EQ(unmatched[0].entry, "model.layers.7.self_attn.q_proj.weight");
  EXPECT_EQ(unmatched[0].where.pointer, "/model.layers.7.self_attn.q_proj.weight");
  EXPECT_TRUE(unmatched[0].where.file.ends_with("quant_model_description.json"));
  EXPECT_FALSE(unmatched[0].dialects.empty());
  EXPECT_EQ(unmatched[0].dialects.front(), "native");
  ASSERT_FALSE(unmatched[0].suggestions.empty());
  EXPECT_TRUE(unmatched[0].suggestions.front().ends_with(".self_attn.q_proj.weight"))
      << unmatched[0].suggestions.front();
  // The fixture's own description is clean.
  EXPECT_TRUE(
      Lint(std::filesystem::path(QUANTPATH_TEST_DATA) / "documented" / "modelslim_llama_w8a8")
          .empty());
}

TEST(Lint, AProducersOwnConfigIsClean) {
  for (const char* name : {"ct_llama_w4a16_g64_sym", "mo_llama_nvfp4", "bnb_llama_nf4_b128",
                           "ar_llama_auto_gptq_w4g64_sym"}) {
    EXPECT_TRUE(Lint(std::filesystem::path(QUANTPATH_TEST_DATA) / "producers" / name).empty())
        << name;
  }
}

}  // namespace
}  // namespace quantpath
