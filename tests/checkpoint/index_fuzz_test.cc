// Fuzz-style test of the index reader: seeded mutations of a valid model.safetensors.index.json
// (byte flips, deleted and repeated spans, inserted tokens, rewritten shard names), each opened,
// read and validated without crashing (run it under ASan/UBSan).
#include <gtest/gtest.h>

#include <random>

#include "quantpath/checkpoint.h"
#include "st_test_util.h"

namespace quantpath {
namespace {

constexpr int kMutations = 1500;
constexpr uint64_t kBaseSeed = 0x1de7;

constexpr char kIndex[] = R"({"metadata": {"total_size": 13}, "weight_map": {
  "a.w": "model-00001-of-00002.safetensors",
  "a.b": "model-00001-of-00002.safetensors",
  "b.w": "model-00002-of-00002.safetensors"}})";

std::string Mutate(const std::string& seed, uint64_t case_seed) {
  std::mt19937_64 rng(case_seed);
  auto pick = [&rng](size_t n) { return static_cast<size_t>(rng() % n); };
  const char* strings[] = {"model-00002-of-00002.safetensors",
                           "../model-00001-of-00002.safetensors",
                           "/etc/hostname",
                           "",
                           ".",
                           "sub/x.safetensors",
                           "a.w",
                           "b.w",
                           "model.safetensors.index.json",
                           "weight_map",
                           "metadata",
                           "total_size"};
  const char* tokens[] = {
      ",", "{",    "}",  "[",     "]",         "\"",
      ":", "null", "-1", "1e999", "\"x\": 1,", "\"c\": \"model-00001-of-00002.safetensors\","};
  std::string f = seed;
  for (size_t edits = 1 + pick(3); edits > 0 && !f.empty(); --edits) {
    switch (pick(8)) {  // half of the edits rewrite a string: they reach deeper checks
      case 0:           // flip one bit
        f[pick(f.size())] ^= static_cast<char>(1 << pick(8));
        break;
      case 1:  // delete a span
        f.erase(pick(f.size()), 1 + pick(12));
        break;
      case 2: {  // repeat a span
        size_t start = pick(f.size());
        f.insert(start, f.substr(start, 1 + pick(40)));
        break;
      }
      case 3:  // insert a token
        f.insert(pick(f.size() + 1), tokens[pick(std::size(tokens))]);
        break;
      default: {  // rewrite the contents of a string literal
        std::vector<size_t> quotes;
        for (size_t i = 0; i < f.size(); ++i) {
          if (f[i] == '"') quotes.push_back(i);
        }
        if (quotes.size() < 2) break;
        size_t q = pick(quotes.size() - 1);
        f.replace(quotes[q] + 1, quotes[q + 1] - quotes[q] - 1, strings[pick(std::size(strings))]);
        break;
      }
    }
  }
  return f;
}

TEST(CheckpointIndexFuzz, SeededMutationsNeverCrash) {
  st_test::TempFolder dir("index_fuzz");
  std::string u8 = "abcdefgh";
  st_test::WriteFile(dir.path() / "model-00001-of-00002.safetensors",
                     st_test::FileFor({{"a.w", "U8", {2, 4}, u8}, {"a.b", "U8", {2}, "ab"}}));
  st_test::WriteFile(dir.path() / "model-00002-of-00002.safetensors",
                     st_test::FileFor({{"b.w", "U8", {3}, "abc"}}));
  int opened = 0, validated = 0;
  for (int i = 0; i < kMutations; ++i) {
    SCOPED_TRACE("mutation " + std::to_string(i) + ", seed " + std::to_string(kBaseSeed + i));
    st_test::WriteFile(dir.path() / "model.safetensors.index.json",
                       Mutate(kIndex, kBaseSeed + static_cast<uint64_t>(i)));
    auto ckpt = Checkpoint::Open(dir.path());
    if (!ckpt.ok()) {
      EXPECT_FALSE(ckpt.status().message().empty());
      continue;
    }
    ++opened;
    for (const std::string& name : ckpt->TensorNames()) {
      auto view = ckpt->Get(name);
      if (view.ok()) (void)CopyTensor<uint8_t>(*view);
    }
    if (ckpt->Validate().ok()) ++validated;
  }
  // The mutations exercise every outcome: refused at Open, refused by Validate, accepted.
  RecordProperty("opened", opened);
  RecordProperty("validated", validated);
  EXPECT_GT(opened, validated);
  EXPECT_GT(validated, 0);
  EXPECT_LT(opened, kMutations);
}

}  // namespace
}  // namespace quantpath
