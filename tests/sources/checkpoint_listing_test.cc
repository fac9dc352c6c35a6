// The checkpoint listing of a model folder: the safetensors headers when the shards are present
// (names, dtypes, shapes; validated), the index's names alone without them, nothing for a
// config-only folder; and the quantized parameter names vLLM derives from the headers. The
// expected dtypes and shapes are the GPTQ v1 layout the fixture's writer documents
// (tools/fixtures/write_tiny_fixtures.py): qweight I32 [K/8, N], scales F16 [K/32, N].
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "quantpath/sources.h"

namespace quantpath {
namespace {

namespace fs = std::filesystem;

const fs::path kTiny = fs::path(QUANTPATH_TEST_DATA) / "checkpoints/llama-tiny-gptq";

class Scratch {
 public:
  Scratch() {
    static int counter = 0;
    dir_ = fs::temp_directory_path() /
           ("quantpath-listing-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  void Copy(const std::string& file) const { fs::copy_file(kTiny / file, dir_ / file); }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

const CheckpointTensor* Find(const CheckpointListing& listing, std::string_view name) {
  for (const CheckpointTensor& t : listing.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

TEST(CheckpointListing, ShardHeadersGiveDtypesAndShapes) {
  Result<ConfigSources> sources = ConfigSources::Load(kTiny);
  ASSERT_TRUE(sources.ok()) << sources.status().message();
  const CheckpointListing& listing = sources->checkpoint();
  EXPECT_EQ(listing.origin, CheckpointOrigin::kHeaders);
  // 2 norms per block, 4 tensors for each of the 13 GPTQ modules, layer 0's f16 down_proj weight,
  // the embedding, the final norm and the LM head.
  EXPECT_EQ(listing.tensors.size(), 2u * 2 + 13 * 4 + 1 + 3);
  const CheckpointTensor* q = Find(listing, "model.layers.0.self_attn.q_proj.qweight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dtype, "I32");
  EXPECT_EQ(q->shape, (std::vector<int64_t>{32 / 8, 32}));
  const CheckpointTensor* scales = Find(listing, "model.layers.1.mlp.down_proj.scales");
  ASSERT_NE(scales, nullptr);
  EXPECT_EQ(scales->dtype, "F16");
  EXPECT_EQ(scales->shape, (std::vector<int64_t>{64 / 32, 32}));
  EXPECT_TRUE(std::is_sorted(
      listing.tensors.begin(), listing.tensors.end(),
      [](const CheckpointTensor& a, const CheckpointTensor& b) { return a.name < b.name; }));

  // vLLM's quantized parameters: every tensor not in f16/bf16/f32, i.e. the I32 qweight, qzeros
  // and g_idx of the 13 GPTQ modules.
  ASSERT_TRUE(sources->checkpoint_quantized_params().has_value());
  const std::vector<std::string>& params = *sources->checkpoint_quantized_params();
  EXPECT_EQ(params.size(), 13u * 3);
  for (const std::string& name : params) {
    EXPECT_TRUE(name.ends_with(".qweight") || name.ends_with(".qzeros") || name.ends_with(".g_idx"))
        << name;
  }
  EXPECT_EQ(std::count(params.begin(), params.end(), "model.layers.0.mlp.down_proj.qweight"), 0);
}

TEST(CheckpointListing, AnIndexWithoutItsShardsGivesNamesOnly) {
  Scratch scratch;
  scratch.Copy("config.json");
  scratch.Copy("model.safetensors.index.json");
  Result<ConfigSources> sources = ConfigSources::Load(scratch.dir());
  ASSERT_TRUE(sources.ok()) << sources.status().message();
  const CheckpointListing& listing = sources->checkpoint();
  EXPECT_EQ(listing.origin, CheckpointOrigin::kIndex);
  EXPECT_EQ(listing.source, "model.safetensors.index.json");
  EXPECT_EQ(listing.tensors.size(), 2u * 2 + 13 * 4 + 1 + 3);
  const CheckpointTensor* q = Find(listing, "model.layers.0.self_attn.q_proj.qweight");
  ASSERT_NE(q, nullptr);
  EXPECT_FALSE(q->dtype.has_value());
  EXPECT_FALSE(q->shape.has_value());
  EXPECT_FALSE(sources->checkpoint_quantized_params().has_value());
}

// A clone made without git-lfs holds pointer files where the shards would be: names only, from
// the index, instead of an invalid header.
TEST(CheckpointListing, GitLfsPointersCountAsAbsentShards) {
  Scratch scratch;
  scratch.Copy("config.json");
  scratch.Copy("model.safetensors.index.json");
  for (const char* shard :
       {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
    std::ofstream(scratch.dir() / shard)
        << "version https://git-lfs.github.com/spec/v1\n"
           "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
           "size 15952\n";
  }
  Result<ConfigSources> sources = ConfigSources::Load(scratch.dir());
  ASSERT_TRUE(sources.ok()) << sources.status().message();
  EXPECT_EQ(sources->checkpoint().origin, CheckpointOrigin::kIndex);
  EXPECT_EQ(sources->checkpoint().tensors.size(), 2u * 2 + 13 * 4 + 1 + 3);
  // Without the index the folder says nothing about its tensors.
  fs::remove(scratch.dir() / "model.safetensors.index.json");
  Result<ConfigSources> bare = ConfigSources::Load(scratch.dir());
  ASSERT_TRUE(bare.ok()) << bare.status().message();
  EXPECT_EQ(bare->checkpoint().origin, CheckpointOrigin::kAbsent);
}

TEST(CheckpointListing, ConfigOnlyAndInMemorySources) {
  Result<ConfigSources> corpus =
      ConfigSources::Load(fs::path(QUANTPATH_TEST_DATA) / "corpus/TheBloke__Llama-2-13B-chat-GPTQ");
  ASSERT_TRUE(corpus.ok()) << corpus.status().message();
  EXPECT_EQ(corpus->checkpoint().origin, CheckpointOrigin::kAbsent);
  EXPECT_TRUE(corpus->checkpoint().tensors.empty());
  EXPECT_EQ(ConfigSources::FromMemory({}).checkpoint().origin, CheckpointOrigin::kUnknown);
}

TEST(CheckpointListing, RewrittenFilesKeepTheCheckpointFacts) {
  Result<ConfigSources> sources = ConfigSources::Load(kTiny);
  ASSERT_TRUE(sources.ok()) << sources.status().message();
  sources->set_requested_method("gptq");
  ConfigSources rewritten = sources->WithFiles({});
  EXPECT_TRUE(rewritten.files().empty());
  EXPECT_EQ(rewritten.dir(), kTiny);
  EXPECT_EQ(rewritten.checkpoint().origin, CheckpointOrigin::kHeaders);
  EXPECT_EQ(rewritten.checkpoint().tensors.size(), sources->checkpoint().tensors.size());
  EXPECT_EQ(rewritten.checkpoint_quantized_params(), sources->checkpoint_quantized_params());
  EXPECT_EQ(rewritten.requested_method(), "gptq");
}

TEST(CheckpointListing, ABrokenShardIsAnErrorNamingIt) {
  Scratch scratch;
  scratch.Copy("config.json");
  scratch.Copy("model.safetensors.index.json");
  scratch.Copy("model-00001-of-00002.safetensors");
  scratch.Copy("model-00002-of-00002.safetensors");
  // Cut the second shard short: its header's offsets no longer end at the end of the file.
  const fs::path shard = scratch.dir() / "model-00002-of-00002.safetensors";
  fs::resize_file(shard, fs::file_size(shard) - 8);
  Result<ConfigSources> sources = ConfigSources::Load(scratch.dir());
  ASSERT_FALSE(sources.ok());
  EXPECT_NE(sources.status().message().find("model-00002-of-00002.safetensors"), std::string::npos)
      << sources.status().message();
}

}  // namespace
}  // namespace quantpath
