// The tensors of no site (ModelSites::other_tensors) against every checkpoint listing committed
// with its config.json: the corpus indexes (tests/data/corpus/SOURCES.md), the unknown
// architectures of tests/data/models, and the fixtures with safetensors files (checkpoints,
// producers, documented), whose headers give the shapes too; all under the native dialect.
//
// The check does not repeat the loader's (every tensor through its site's source layout): it
// needs no layout, so it runs on an index's names alone. It compares the part of the checkpoint
// that is no site's. Every tensor that lies under no site's checkpoint module (SiteModules) must
// be an other tensor, or one the engines skip (rotary inv_freq); every other tensor must be in the
// checkpoint, once, with the stored shape where the headers give it, and be no site's own weight
// or bias. So it fails on a forgotten norm (under no site, not listed), a misspelt one (listed,
// not in the checkpoint), a wrong shape, and a tensor listed both ways. A forgotten tensor that
// lies under a site's module (a router's e_score_correction_bias under `mlp.gate.`) it cannot
// see: the architectures' own tests name those, and `load` requires them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "quantpath/models.h"
#include "tests/models/models_test_util.h"

namespace quantpath {
namespace {

namespace fs = std::filesystem;
using models_test::SiteModules;
using models_test::UnderModule;

const Dialect kNative = *ParseDialect("native");

// Folders under tests/data/`group` holding a config.json and a checkpoint listing (an index, or
// safetensors files); an `*.excerpt.json` index is not one.
std::vector<std::string> FoldersWithListings(const std::string& group) {
  std::vector<std::string> folders;
  for (const auto& entry : fs::directory_iterator(fs::path(QUANTPATH_TEST_DATA) / group)) {
    if (!entry.is_directory() || !fs::exists(entry.path() / "config.json")) continue;
    bool listing = fs::exists(entry.path() / "model.safetensors.index.json");
    for (const auto& file : fs::directory_iterator(entry.path())) {
      listing = listing || file.path().extension() == ".safetensors";
    }
    if (listing) folders.push_back(group + "/" + entry.path().filename().string());
  }
  std::sort(folders.begin(), folders.end());
  return folders;
}

void ExpectOtherTensorsAreTheNonSiteTensors(const std::string& folder) {
  SCOPED_TRACE(folder);
  auto sources = ConfigSources::Load(fs::path(QUANTPATH_TEST_DATA) / folder);
  ASSERT_TRUE(sources.ok()) << sources.status().message();
  auto sites = BuildModelSites(*sources, kNative);
  ASSERT_TRUE(sites.ok()) << sites.status().message();
  const CheckpointListing& listing = sources->checkpoint();
  const bool shapes = listing.origin == CheckpointOrigin::kHeaders;
  std::map<std::string, std::optional<std::vector<int64_t>>, std::less<>> tensors;
  for (const CheckpointTensor& t : listing.tensors) tensors.emplace(t.name, t.shape);
  ASSERT_FALSE(tensors.empty());

  std::set<std::string, std::less<>> modules;
  std::set<std::string, std::less<>> site_params;  // `<module>.weight` and `.bias` of every site
  for (const LayerSite& s : sites->sites) {
    for (const std::string& module : SiteModules(s)) {
      modules.insert(module);
      site_params.insert(module + ".weight");
      site_params.insert(module + ".bias");
    }
  }
  std::set<std::string, std::less<>> others;
  int64_t elements = 0;
  for (const OtherTensor& other : sites->other_tensors) {
    EXPECT_TRUE(others.insert(other.name).second) << other.name << " is listed twice";
    EXPECT_FALSE(site_params.contains(other.name)) << other.name << " is a site's";
    auto it = tensors.find(other.name);
    if (it == tensors.end()) {
      ADD_FAILURE() << other.name << " is not in the checkpoint";
      continue;
    }
    if (shapes) {
      EXPECT_EQ(other.shape, it->second) << other.name;
    }
    int64_t n = 1;
    for (int64_t d : other.shape) n *= d;
    elements += n;
  }
  // KV-cache scales (compressed-tensors' self_attn.k_scale) sit on the module that holds an
  // attention site; `check` and `load` give them to that site (tests/pipeline/kv_scales_test.cc).
  std::set<std::string, std::less<>> attention_modules;
  for (const LayerSite& s : sites->sites) {
    if (s.kind == SiteKind::kAttention) {
      attention_modules.insert(s.checkpoint_path.substr(0, s.checkpoint_path.rfind('.')));
    }
  }
  const auto kv_scale = [&](const std::string& name) {
    const size_t dot = name.rfind('.');
    return dot != std::string::npos && name.ends_with("_scale") &&
           attention_modules.contains(name.substr(0, dot));
  };
  for (const auto& [name, shape] : tensors) {
    if (others.contains(name) || UnderModule(modules, name) || kv_scale(name)) continue;
    EXPECT_TRUE(name.ends_with(".rotary_emb.inv_freq"))
        << name << " belongs to no site and is not an other tensor";
  }
  // other_params is their sum: the native dialect leaves no module unlisted, and an index
  // without its shards gives inferred sites no shapes (nor other_params).
  EXPECT_TRUE(sites->unlisted_modules.empty());
  EXPECT_TRUE(sites->skipped_modules.empty());
  const std::vector<std::string> known = SupportedArchitectures();
  const bool inferred = std::find(known.begin(), known.end(), sites->architecture) == known.end();
  EXPECT_EQ(sites->other_params, inferred && !shapes ? 0 : elements);
}

TEST(OtherTensors, CorpusIndexes) {
  const std::vector<std::string> folders = FoldersWithListings("corpus");
  // gpt-oss-20b, Molmo-7B-D, Qwen-VL-Chat-Int4 and Qwen3-14B-MLX come with their indexes.
  EXPECT_EQ(folders.size(), 4u);
  for (const std::string& folder : folders) ExpectOtherTensorsAreTheNonSiteTensors(folder);
}

TEST(OtherTensors, InferredSites) {
  const std::vector<std::string> folders = FoldersWithListings("models");
  EXPECT_EQ(folders.size(), 2u);
  for (const std::string& folder : folders) ExpectOtherTensorsAreTheNonSiteTensors(folder);
}

TEST(OtherTensors, FixturesWithShards) {
  size_t count = 0;
  for (const char* group : {"checkpoints", "producers", "documented"}) {
    for (const std::string& folder : FoldersWithListings(group)) {
      ExpectOtherTensorsAreTheNonSiteTensors(folder);
      ++count;
    }
  }
  EXPECT_GT(count, 60u);
}

}  // namespace
}  // namespace quantpath
