// Every input limit through the command line: its environment variable changes it, and hitting it
// is exit 2 with an error naming the file and the variable, in bounded time and memory.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_test_util.h"

namespace quantpath::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kExitBadInput = 2;

// Sets one environment variable for the commands a test runs.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    EXPECT_EQ(setenv(name, value.c_str(), 1), 0);
  }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

// A folder holding only a config.json, removed afterwards.
class ConfigFolder {
 public:
  explicit ConfigFolder(const std::string& config)
      : dir_(fs::path(::testing::TempDir()) /
             ("limits_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::create_directories(dir_);
    std::ofstream(dir_ / "config.json") << config;
  }
  ~ConfigFolder() { fs::remove_all(dir_); }
  std::string path() const { return dir_.string(); }

 private:
  fs::path dir_;
};

// A Llama of `layers` blocks quantized by GPTQ with the given `dynamic` object.
std::string GptqConfig(int layers, const std::string& dynamic) {
  return R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
    "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 4,
    "vocab_size": 1000, "torch_dtype": "float16", "num_hidden_layers": )" +
         std::to_string(layers) +
         R"(, "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128,
    "desc_act": false, "sym": true, "dynamic": )" +
         dynamic + "}}";
}

// 20 rules, each backtracking through a few hundred thousand steps on every layer name without
// reaching the per-match limit (four nested `.*` before a class that never matches): 512 layers of
// them once took 76 s. The plan's step budget stops the plan after a few hundred such matches.
std::string SlowDynamic() {
  std::string dynamic = "{";
  for (int i = 0; i < 20; ++i) {
    dynamic +=
        std::string(i ? ", " : "") + "\"-:(?:.*.*.*.*)[0-9]{9}|x" + std::to_string(i) + "\": {}";
  }
  return dynamic + "}";
}

TEST(RegexLimits, ManyBacktrackingRulesSpendThePlanBudget) {
  ConfigFolder folder(GptqConfig(512, SlowDynamic()));
  for (const char* engine : {"vllm@helpers", "sglang@helpers", "native"}) {
    CommandResult r = RunCli("plan " + folder.path() + " --engine " + engine, true);
    EXPECT_EQ(r.exit_code, kExitBadInput) << engine << "\n" << r.out.substr(0, 2000);
    EXPECT_NE(r.out.find("config.json#/quantization_config/dynamic/"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("regex step budget of one plan (100000000 steps, "
                         "QUANTPATH_MAX_REGEX_PLAN_STEPS)"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("(layer model.layers."), std::string::npos) << r.out;
  }
}

TEST(RegexLimits, ReTargetsOfCompressedTensorsSpendThePlanBudget) {
  const std::string config = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
    "num_key_value_heads": 4, "vocab_size": 1000, "torch_dtype": "bfloat16",
    "num_hidden_layers": 512, "quantization_config": {"quant_method": "compressed-tensors",
    "format": "float-quantized", "ignore": ["lm_head"], "config_groups": {"group_0": {
    "targets": ["re:(?:.*.*.*.*)[0-9]{9}|.*proj"],
    "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": true,
                "dynamic": false},
    "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                          "symmetric": true, "dynamic": true}}}}})";
  ConfigFolder folder(config);
  for (const char* engine : {"vllm@helpers", "sglang@helpers", "native"}) {
    CommandResult r = RunCli("plan " + folder.path() + " --engine " + engine, true);
    EXPECT_EQ(r.exit_code, kExitBadInput) << engine << "\n" << r.out.substr(0, 2000);
    EXPECT_NE(r.out.find("config.json#/quantization_config/config_groups/group_0/targets/0"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("QUANTPATH_MAX_REGEX_PLAN_STEPS"), std::string::npos) << r.out;
  }
}

TEST(RegexLimits, TheBudgetIsASetting) {
  // Two blocks stay within the default budget; a budget of 1000 steps does not hold one match.
  ConfigFolder folder(GptqConfig(2, SlowDynamic()));
  EXPECT_EQ(RunCli("plan " + folder.path() + " --engine vllm").exit_code, 0);
  ScopedEnv env("QUANTPATH_MAX_REGEX_PLAN_STEPS", "1000");
  CommandResult r = RunCli("plan " + folder.path() + " --engine vllm", true);
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.out;
  EXPECT_NE(r.out.find("(1000 steps, QUANTPATH_MAX_REGEX_PLAN_STEPS)"), std::string::npos) << r.out;
}

TEST(RegexLimits, PerMatchLimitIsASettingAndFailsThePlan) {
  ConfigFolder folder(GptqConfig(2, SlowDynamic()));
  ScopedEnv env("QUANTPATH_MAX_REGEX_MATCH_STEPS", "5000");
  for (const std::string& args :
       {"plan " + folder.path() + " --engine vllm",
        "explain " + folder.path() + " model.layers.1.mlp.down_proj --engine vllm"}) {
    CommandResult r = RunCli(args, true);
    EXPECT_EQ(r.exit_code, kExitBadInput) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("config.json#/quantization_config/dynamic/"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("hit the match limit (5000 steps, QUANTPATH_MAX_REGEX_MATCH_STEPS)"),
              std::string::npos)
        << r.out;
  }
}

TEST(RegexLimits, PatternLengthIsASetting) {
  ConfigFolder folder(GptqConfig(2, R"({"-:.*\\.mlp\\..*": {}})"));
  EXPECT_EQ(RunCli("plan " + folder.path() + " --engine vllm").exit_code, 0);
  ScopedEnv env("QUANTPATH_MAX_REGEX_CHARS", "8");
  CommandResult r = RunCli("plan " + folder.path() + " --engine vllm", true);
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.out;
  EXPECT_NE(r.out.find("config.json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pattern is longer than 8 characters (QUANTPATH_MAX_REGEX_CHARS)"),
            std::string::npos)
      << r.out;
}

TEST(InputLimitsCli, AnUnusableValueNamesTheVariable) {
  ScopedEnv env("QUANTPATH_MAX_SHARDS", "many");
  CommandResult r = RunCli("plan", true);
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.out;
  EXPECT_NE(r.out.find("QUANTPATH_MAX_SHARDS: expected an integer"), std::string::npos) << r.out;
}

// The checkpoint limits, on the fixtures: `run` opens the index and every header.
constexpr char kSharded[] = "tests/data/checkpoints/llama-tiny-fp8-sharded";
constexpr char kSingle[] = "tests/data/checkpoints/llama-tiny-fp8-static";
constexpr char kLayer[] = " --layer model.layers.0.mlp.down_proj";

TEST(CheckpointLimits, DefaultsOpenTheFixtures) {
  EXPECT_EQ(RunCli(std::string("run ") + kSharded + kLayer).exit_code, 0);
  EXPECT_EQ(RunCli(std::string("run ") + kSingle + kLayer).exit_code, 0);
}

TEST(CheckpointLimits, ShardCount) {
  ScopedEnv env("QUANTPATH_MAX_SHARDS", "1");
  CommandResult r = RunCli(std::string("run ") + kSharded + kLayer, true);
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.out;
  EXPECT_NE(r.out.find("model.safetensors.index.json: \"weight_map\" names more than 1 shard "
                       "files (QUANTPATH_MAX_SHARDS)"),
            std::string::npos)
      << r.out;
}

TEST(CheckpointLimits, TensorCountInTheIndexAndInAHeader) {
  ScopedEnv env("QUANTPATH_MAX_TENSORS", "3");
  CommandResult indexed = RunCli(std::string("run ") + kSharded + kLayer, true);
  EXPECT_EQ(indexed.exit_code, kExitBadInput) << indexed.out;
  EXPECT_NE(indexed.out.find("model.safetensors.index.json: \"weight_map\" lists 19 tensors, over "
                             "the limit of 3 (QUANTPATH_MAX_TENSORS)"),
            std::string::npos)
      << indexed.out;
  CommandResult single = RunCli(std::string("run ") + kSingle + kLayer, true);
  EXPECT_EQ(single.exit_code, kExitBadInput) << single.out;
  EXPECT_NE(single.out.find("model.safetensors: the header lists"), std::string::npos)
      << single.out;
  EXPECT_NE(single.out.find("over the limit of 3 (QUANTPATH_MAX_TENSORS)"), std::string::npos)
      << single.out;
}

TEST(CheckpointLimits, HeaderBytes) {
  ScopedEnv env("QUANTPATH_MAX_HEADER_BYTES", "64");
  CommandResult r = RunCli(std::string("run ") + kSingle + kLayer, true);
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.out;
  EXPECT_NE(r.out.find("model.safetensors: header length"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exceeds the limit of 64 bytes (QUANTPATH_MAX_HEADER_BYTES)"),
            std::string::npos)
      << r.out;
}

TEST(JsonLimitsCli, ConfigSizeDepthAndValues) {
  const std::string example = "plan";  // the bundled example
  {
    ScopedEnv env("QUANTPATH_MAX_JSON_BYTES", "100");
    CommandResult r = RunCli(example, true);
    EXPECT_EQ(r.exit_code, kExitBadInput) << r.out;
    EXPECT_NE(r.out.find("config.json"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("over the limit of 100 bytes (QUANTPATH_MAX_JSON_BYTES)"),
              std::string::npos)
        << r.out;
  }
  {
    ScopedEnv env("QUANTPATH_MAX_JSON_DEPTH", "2");
    CommandResult r = RunCli(example, true);
    EXPECT_EQ(r.exit_code, kExitBadInput) << r.out;
    EXPECT_NE(r.out.find("JSON nested deeper than 2 levels (QUANTPATH_MAX_JSON_DEPTH)"),
              std::string::npos)
        << r.out;
  }
  {
    ScopedEnv env("QUANTPATH_MAX_JSON_VALUES", "10");
    CommandResult r = RunCli(example, true);
    EXPECT_EQ(r.exit_code, kExitBadInput) << r.out;
    EXPECT_NE(r.out.find("QUANTPATH_MAX_JSON_VALUES"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace quantpath::testing
