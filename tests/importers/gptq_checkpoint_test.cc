// vLLM's modules_in_block_to_quantize derived from the model folder when the config lacks it
// (GPTQMarlinConfig.maybe_update_config: the parent module of every tensor not stored in
// f16/bf16/f32), along the three paths `plan` has: the shard headers, the index's names alone,
// and a config-only folder (the exporters' standard layout, with a note). The checkpoint is
// tests/data/checkpoints/llama-tiny-gptq (tools/fixtures/write_tiny_fixtures.py): every linear of
// its two decoder blocks stores an I32 qweight except layer 0's mlp.down_proj, kept in f16.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "quantpath/models.h"
#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

namespace fs = std::filesystem;
using family_test::D;
using family_test::HasNote;

const std::string kTiny = std::string(QUANTPATH_TEST_DATA) + "/checkpoints/llama-tiny-gptq";

// A scratch copy of the tiny checkpoint with only the named files.
class PartialCopy {
 public:
  explicit PartialCopy(const std::vector<std::string>& files) {
    static int counter = 0;
    dir_ = fs::temp_directory_path() /
           ("quantpath-gptq-ckpt-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const std::string& f : files) fs::copy_file(fs::path(kTiny) / f, dir_ / f);
  }
  ~PartialCopy() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  std::string dir() const { return dir_.string(); }

 private:
  fs::path dir_;
};

// Every linear and LM head site of the folder's model, decided in `dialect`: path → decision.
std::map<std::string, std::string> Decide(const ConfigSources& sources, std::string_view dialect,
                                          QuantPlan* plan_out = nullptr) {
  std::map<std::string, std::string> out;
  Result<QuantPlan> plan = ImportPlan(sources, D(dialect));
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  Result<ModelSites> sites = BuildModelSites(sources, D(dialect));
  EXPECT_TRUE(sites.ok()) << sites.status().message();
  if (!plan.ok() || !sites.ok()) return out;
  for (const LayerSite& site : sites->sites) {
    if (site.kind != SiteKind::kLinear && site.kind != SiteKind::kLmHead) continue;
    out[site.path] = std::string(DecisionKindName(DecideSite(*plan, site).kind));
  }
  if (plan_out != nullptr) *plan_out = *plan;
  return out;
}

ConfigSources Load(const std::string& dir) {
  Result<ConfigSources> sources = ConfigSources::Load(dir);
  EXPECT_TRUE(sources.ok()) << sources.status().message();
  return sources.ok() ? *sources : ConfigSources::FromMemory({});
}

// What the checkpoint holds: down_proj of layer 0 in f16, every other linear of both blocks as
// GPTQ, and the LM head in f16 (lm_head is absent from the config, i.e. false).
const std::map<std::string, std::string> kAsStored = {
    {"model.layers.0.self_attn.qkv_proj", "quantized"},
    {"model.layers.0.self_attn.o_proj", "quantized"},
    {"model.layers.0.mlp.gate_up_proj", "quantized"},
    {"model.layers.0.mlp.down_proj", "unquantized"},
    {"model.layers.1.self_attn.qkv_proj", "quantized"},
    {"model.layers.1.self_attn.o_proj", "quantized"},
    {"model.layers.1.mlp.gate_up_proj", "quantized"},
    {"model.layers.1.mlp.down_proj", "quantized"},
    {"lm_head", "unquantized"},
};

TEST(GptqCheckpoint, ShardHeadersGiveTheQuantizedModules) {
  ConfigSources sources = Load(kTiny);
  ASSERT_EQ(sources.checkpoint().origin, CheckpointOrigin::kHeaders);
  for (std::string_view dialect : {"vllm@helpers", "vllm@0.33"}) {
    QuantPlan plan;
    EXPECT_EQ(Decide(sources, dialect, &plan), kAsStored) << dialect;
    EXPECT_TRUE(HasNote(plan, "derived as vLLM does from the dtypes in the safetensors headers"))
        << dialect;
    EXPECT_TRUE(HasNote(plan, ": 13 modules")) << dialect;  // 2 blocks × 7 linears, one in f16
  }
  // Native follows the config alone (GPTQModel quantizes every linear of the blocks).
  EXPECT_EQ(Decide(sources, "native")["model.layers.0.mlp.down_proj"], "quantized");
}

// match gives the importer the same list through the case's checkpoint_quantized_params.
TEST(GptqCheckpoint, MatchAndPlanFeedTheSameInput) {
  ConfigSources folder = Load(kTiny);
  ASSERT_TRUE(folder.checkpoint_quantized_params().has_value());
  std::vector<SourceFile> files = folder.files();
  ConfigSources in_memory = ConfigSources::FromMemory(std::move(files));
  in_memory.set_checkpoint_quantized_params(*folder.checkpoint_quantized_params());
  EXPECT_EQ(Decide(in_memory, "vllm@helpers"), kAsStored);
  // Without the list (a case with no checkpoint information) vLLM quantizes no linear layer.
  ConfigSources no_info = ConfigSources::FromMemory(folder.files());
  std::map<std::string, std::string> none = Decide(no_info, "vllm@helpers");
  for (const auto& [path, decision] : none) EXPECT_EQ(decision, "unquantized") << path;
}

TEST(GptqCheckpoint, IndexNamesWithoutShardsAssumeTheStandardDtypes) {
  PartialCopy copy({"config.json", "model.safetensors.index.json"});
  ConfigSources sources = Load(copy.dir());
  ASSERT_EQ(sources.checkpoint().origin, CheckpointOrigin::kIndex);
  EXPECT_FALSE(sources.checkpoint_quantized_params().has_value());
  for (std::string_view dialect : {"vllm@helpers", "vllm@0.33"}) {
    QuantPlan plan;
    // The index names layer 0's down_proj `.weight`, not `.qweight`: the same answer as the
    // headers give.
    EXPECT_EQ(Decide(sources, dialect, &plan), kAsStored) << dialect;
    EXPECT_TRUE(HasNote(plan, "assumed the dtypes GPTQ exporters store under the standard names"))
        << dialect;
  }
}

TEST(GptqCheckpoint, ConfigOnlyFolderAssumesTheExportersLayoutWithANote) {
  PartialCopy copy({"config.json"});
  ConfigSources sources = Load(copy.dir());
  ASSERT_EQ(sources.checkpoint().origin, CheckpointOrigin::kAbsent);
  for (std::string_view dialect : {"vllm@helpers", "vllm@0.33"}) {
    QuantPlan plan;
    std::map<std::string, std::string> decided = Decide(sources, dialect, &plan);
    // Every linear of the decoder blocks, down_proj of layer 0 included: the folder cannot say
    // that the exporter left it out.
    std::map<std::string, std::string> expected = kAsStored;
    expected["model.layers.0.mlp.down_proj"] = "quantized";
    EXPECT_EQ(decided, expected) << dialect;
    EXPECT_TRUE(HasNote(plan, "assumed the GPTQ exporters' standard layout")) << dialect;
  }
}

// The corpus folders whose config.json embeds the description (config-only copies).
TEST(GptqCheckpoint, CorpusConfigOnlyFoldersAreQuantizedInVllm) {
  for (std::string_view folder :
       {"TheBloke__Llama-2-13B-chat-GPTQ", "TheBloke__MythoMax-L2-13B-GPTQ"}) {
    ConfigSources sources = family_test::Corpus(folder);
    for (std::string_view dialect : {"vllm@helpers", "vllm@0.33"}) {
      std::map<std::string, std::string> decided = Decide(sources, dialect);
      int quantized = 0;
      for (const auto& [path, decision] : decided) quantized += decision == "quantized";
      EXPECT_EQ(quantized, static_cast<int>(decided.size()) - 1) << folder << " " << dialect;
      EXPECT_EQ(decided["lm_head"], "unquantized") << folder << " " << dialect;
    }
  }
  // Llama-2-13B: 40 blocks × (qkv_proj, o_proj, gate_up_proj, down_proj).
  std::map<std::string, std::string> llama =
      Decide(family_test::Corpus("TheBloke__Llama-2-13B-chat-GPTQ"), "vllm@helpers");
  EXPECT_EQ(llama.size(), 161u);
}

// A description read from a standalone quantize_config.json alone keeps the earlier rule.
TEST(GptqCheckpoint, StandaloneOnlyFoldersAreNotDerived) {
  QuantPlan plan;
  std::map<std::string, std::string> decided =
      Decide(family_test::Corpus("TheBloke__WizardCoder-15B-1.0-GPTQ"), "vllm@helpers", &plan);
  ASSERT_FALSE(decided.empty());
  for (const auto& [path, decision] : decided) EXPECT_EQ(decision, "unquantized") << path;
  EXPECT_TRUE(HasNote(plan, "tensor dtypes are unknown"));
}

}  // namespace
}  // namespace quantpath
