// `quantpath load --tp 2 --rank R` through LoadModel, on every producer-written and
// documentation-written fixture (tests/data/producers, tests/data/documented): both ranks load
// every site, and what they hold adds up to the whole model's (tp 1) held bytes:
//   - an embedding's rows split in two: the ranks' bytes add up to the whole;
//   - routers and norms are replicated: each rank holds them whole;
//   - every split layer holds less than the whole on each rank and at least the whole on both;
//     for the symmetric int4 group families, whose every tensor is split with the weight (scales
//     per row and group, no per-layer scalar), the two ranks hold exactly the whole plus
//     the replicated KV head: Llama's and Qwen3-MoE's qkv [128 + 64 + 64, 128] with one KV head
//     keeps q's 64 rows and both 64-row KV legs on each rank, 384 of 256 rows.
// A vocabulary the size does not divide is an error naming the legal sizes.
// Block fp8 folders cannot split (q's 64 rows are half a 128-row block), nor can ModelOpt's
// W4A8_AWQ, dense or MoE (o_proj's K of 128 is one group of 128): load fails naming the layer and
// the legal sizes, as vLLM refuses such a partition. (The MoE folder's experts split by
// themselves: moe_tp_test.cc.)
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "quantpath/pipeline.h"
#include "tests/pipeline/producer_values.h"

namespace quantpath {
namespace {

constexpr int kTp = 2;

Result<ModelLoad> Load(const std::string& dir, int tp, int rank) {
  QP_ASSIGN_OR_RETURN(OpenOptions options, testing::FixtureOptions(dir, tp));
  QP_ASSIGN_OR_RETURN(Model model, OpenModel(dir, options));
  // LoadModel points into the Model's sites: keep only what outlives it.
  QP_ASSIGN_OR_RETURN(ModelLoad load, LoadModel(model, LoadModelOptions{rank, {}}));
  for (SiteLoad& site : load.sites) site.site = nullptr;
  return load;
}

const std::set<std::string> kWholeBlocksOrGroups = {
    "producers/ct_llama_fp8_block",          "producers/ct_qwen3moe_fp8_block",
    "producers/mo_llama_fp8_pb_wo",          "producers/mo_llama_w4a8_awq",
    "documented/modelopt_qwen3moe_w4a8_awq", "producers/bnb_llama_nf4_b128"};
// Symmetric integer groups (int3, int4, int8): zero points (the asymmetric folders') pack two
// groups per byte, so a rank's one group of K / 2 takes a byte per row as the whole layer's two
// do. A 3-bit rank's 64 rows or columns are 6 whole int32 words.
const std::set<std::string> kExact = {
    "producers/ar_llama_auto_gptq_w3g64_sym",  "producers/ar_llama_auto_gptq_w4g64_sym",
    "producers/ar_llama_auto_round_w4g64_sym", "producers/ar_qwen3moe_auto_round_w4g64_sym",
    "producers/ct_llama_w4a16_g64_sym",        "producers/ct_llama_w8a16_g64_sym",
    "producers/ct_qwen3moe_w4a16_g64_sym"};

TEST(LoadTpTest, EveryFixtureAtTpTwo) {
  const std::vector<std::string> fixtures = testing::FixtureFolders();
  EXPECT_EQ(fixtures.size(), 72u);
  int exact = 0;
  for (const std::string& dir : fixtures) {
    SCOPED_TRACE(dir);
    const std::string path = std::string(QUANTPATH_TEST_DATA) + "/" + dir;
    Result<ModelLoad> whole = Load(path, 1, 0);
    ASSERT_TRUE(whole.ok()) << whole.status().message();
    std::vector<ModelLoad> ranks;
    for (int rank = 0; rank < kTp; ++rank) {
      Result<ModelLoad> load = Load(path, kTp, rank);
      if (kWholeBlocksOrGroups.contains(dir)) {
        ASSERT_FALSE(load.ok());
        EXPECT_NE(load.status().message().find("legal --tp: 1"), std::string::npos)
            << load.status().message();
        continue;
      }
      ASSERT_TRUE(load.ok()) << load.status().message();
      EXPECT_EQ(load->layers_loaded, whole->layers_loaded);
      EXPECT_EQ(load->tensors, whole->tensors);
      EXPECT_EQ(load->other_bytes, whole->other_bytes);
      ranks.push_back(std::move(*load));
    }
    if (ranks.empty()) continue;
    const bool exact_folder = kExact.contains(dir);
    int64_t whole_sites = 0;
    int64_t rank_sites = 0;
    int qkv = 0;  // split sites holding one and a half times the whole (exact folders)
    for (size_t i = 0; i < whole->sites.size(); ++i) {
      const SiteLoad& w = whole->sites[i];
      const int64_t r0 = ranks[0].sites[i].bytes_held;
      const int64_t r1 = ranks[1].sites[i].bytes_held;
      const std::string site = dir + " site " + std::to_string(i) + " (" + w.spec_id + ")";
      whole_sites += w.bytes_held;
      rank_sites += r0 + r1;
      EXPECT_EQ(ranks[0].sites[i].loaded, w.loaded) << site;
      EXPECT_EQ(ranks[1].sites[i].loaded, w.loaded) << site;
      if (!w.loaded) {
        EXPECT_EQ(r0 + r1, 0) << site;
        continue;
      }
      EXPECT_EQ(ranks[0].sites[i].bytes_read, w.bytes_read) << site;
      if (w.bytes_held == r0 && r0 == r1) continue;  // replicated (a router)
      EXPECT_LT(r0, w.bytes_held) << site;
      EXPECT_LT(r1, w.bytes_held) << site;
      EXPECT_GE(r0 + r1, w.bytes_held) << site;
      if (!exact_folder || r0 + r1 == w.bytes_held) continue;
      EXPECT_EQ(r0, r1) << site;
      EXPECT_EQ((r0 + r1) * 2, w.bytes_held * 3) << site;
      ++qkv;
    }
    // Norms are held whole by each rank.
    const int64_t norms = whole->bytes_held - whole_sites;
    for (const ModelLoad& rank : ranks) {
      int64_t held = 0;
      for (const SiteLoad& site : rank.sites) held += site.bytes_held;
      EXPECT_EQ(rank.bytes_held - held, norms);
    }
    EXPECT_EQ(ranks[0].bytes_held + ranks[1].bytes_held, rank_sites + 2 * norms);
    if (!exact_folder) continue;
    ++exact;
    EXPECT_EQ(qkv, 2);  // one qkv per decoder layer
  }
  EXPECT_EQ(exact, static_cast<int>(kExact.size()));
}

TEST(LoadTpTest, AVocabularyTheSizeDoesNotDivideNamesTheLegalSizes) {
  Result<ModelLoad> load =
      Load(std::string(QUANTPATH_TEST_DATA) + "/producers/ct_llama_w4a16_g64_sym", 3, 0);
  ASSERT_FALSE(load.ok());
  EXPECT_EQ(load.status().message(),
            "model.embed_tokens: the vocabulary of 128 rows (tensor model.embed_tokens.weight) is "
            "not divisible by tensor-parallel size 3 (the vocabulary is split unpadded); legal "
            "--tp: 1, 2, 4, 8, 16, 32, 64");
}

}  // namespace
}  // namespace quantpath
