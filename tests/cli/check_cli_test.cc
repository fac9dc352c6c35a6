// `quantpath check`: exit codes (0 clean, 1 findings, 2 nothing to check), the text summary, the
// JSON shape of docs/json/check.md, an index without its shards, and --engine.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_test_util.h"
#include "tests/pipeline/producer_values.h"

namespace quantpath {
namespace {

using testing::ParseOrDie;
using testing::RunCli;

std::string Data(const std::string& folder) {
  return std::string(QUANTPATH_TEST_DATA) + "/" + folder;
}

TEST(CheckCli, ACleanFixtureExitsZeroWithASummary) {
  auto clean = RunCli("check " + Data("producers/ct_llama_w4a16_g64_sym"));
  EXPECT_EQ(clean.exit_code, 0) << clean.out;
  // dequant.safetensors, the producer's own dequantization beside the weights, is not weights.
  EXPECT_NE(clean.out.find("splits at --tp: 1, 2 (of 1 to 16)\nread: the headers and "),
            std::string::npos)
      << clean.out;
  EXPECT_NE(clean.out.find(" tensor bytes (every value beside the codes) in "), std::string::npos)
      << clean.out;
  EXPECT_NE(clean.out.find("\nchecked 49 tensors: 0 errors, 1 warning\n"), std::string::npos)
      << clean.out;
  auto headers = RunCli("check --headers-only " + Data("producers/ct_llama_w4a16_g64_sym"));
  EXPECT_EQ(headers.exit_code, 0) << headers.out;
  EXPECT_NE(headers.out.find("read: the index and the headers\n"), std::string::npos)
      << headers.out;
}

// A per-tensor fp8 weight scale of 0: `check` reads it (dead-rows), `--headers-only` cannot, and
// `run` fails the layer whose output is zero (rel 0/0), never "ok".
TEST(CheckCli, ADeadLayerFailsCheckAndRun) {
  const std::string o = "model.layers.0.self_attn.o_proj";
  const std::filesystem::path dir =
      testing::MutatedFixture(Data("producers/mo_llama_fp8"), [&](testing::TestTensor* t) {
        if (t->name == o + ".weight_scale") std::fill(t->bytes.begin(), t->bytes.end(), 0);
        return true;
      });
  auto check = RunCli("check " + dir.string());
  EXPECT_EQ(check.exit_code, 1) << check.out;
  EXPECT_NE(check.out.find("error dead-rows: "), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("tensor " + o + ".weight_scale of layer " + o +
                           " has only zero scales (1 of them)"),
            std::string::npos)
      << check.out;
  EXPECT_EQ(RunCli("check --headers-only " + dir.string()).exit_code, 0);
  EXPECT_EQ(RunCli("check --headers-only --deep " + dir.string()).exit_code, 2);
  const Json j = ParseOrDie(RunCli("check --json " + dir.string()).out);
  EXPECT_EQ(j.Find("reads")->string_value(), "values");
  EXPECT_GT(j.Find("bytes_read")->int_value(), 0);

  auto run = RunCli("run " + dir.string() + " --layer " + o + " --json");
  EXPECT_EQ(run.exit_code, 1) << run.out;
  const Json r = ParseOrDie(run.out);
  EXPECT_TRUE(r.Find("zero_reference")->bool_value());
  EXPECT_FALSE(r.Find("pass")->bool_value());
  EXPECT_TRUE(r.Find("rel")->is_null());
  auto text = RunCli("run " + dir.string() + " --layer " + o);
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("(rel is 0/0): the layer computes nothing"), std::string::npos)
      << text.out;
}

TEST(CheckCli, FindingsExitOneAndTheJsonNamesThem) {
  // vLLM builds bitsandbytes experts without a method: their packed weights are findings there.
  const std::string dir = Data("producers/bnb_qwen3moe_nf4");
  auto text = RunCli("check " + dir + " --engine vllm@helpers");
  EXPECT_EQ(text.exit_code, 1) << text.out;
  EXPECT_NE(text.out.find("error stored-quantized: "), std::string::npos) << text.out;
  auto json = RunCli("check " + dir + " --engine vllm@helpers --json");
  EXPECT_EQ(json.exit_code, 1);
  const Json j = ParseOrDie(json.out);
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.members()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"model", "engine", "reads", "bytes_read",
                                            "read_seconds", "gb_per_s", "tensors", "errors",
                                            "warnings", "not_checked", "layers_not_checked",
                                            "loadable_tp", "findings", "config_warnings"}));
  EXPECT_EQ(j.Find("engine")->string_value(), "vllm@helpers");
  // The ignored dequant.safetensors first (the files' problems lead), then the experts.
  ASSERT_GT(j.Find("findings")->items().size(), 1u);
  EXPECT_EQ(j.Find("findings")->items()[0].Find("kind")->string_value(), "ignored-file");
  const Json& f = j.Find("findings")->items()[1];
  std::vector<std::string> finding_keys;
  for (const auto& [key, value] : f.members()) finding_keys.push_back(key);
  EXPECT_EQ(finding_keys, (std::vector<std::string>{"severity", "kind", "file", "tensor", "layer",
                                                    "expected", "found", "message"}));
  EXPECT_EQ(f.Find("severity")->string_value(), "error");
  EXPECT_EQ(f.Find("kind")->string_value(), "stored-quantized");
  EXPECT_EQ(j.Find("errors")->int_value() + j.Find("warnings")->int_value(),
            static_cast<int64_t>(j.Find("findings")->items().size()));
}

TEST(CheckCli, AConfigOnlyFolderHasNoWeightsToCheck) {
  auto result = RunCli("check " + Data("corpus/deepseek-ai__DeepSeek-R1"), true);
  EXPECT_EQ(result.exit_code, 2) << result.out;
  EXPECT_NE(result.out.find("no weights to check"), std::string::npos) << result.out;
}

// gpt-oss-20b's published index without any of its shards: no weights to check, naming the shard
// files it lists (never "0 errors").
TEST(CheckCli, AnIndexWhoseShardsAreAllAbsentHasNoWeightsToCheck) {
  auto result = RunCli("check " + Data("corpus/openai__gpt-oss-20b"), true);
  EXPECT_EQ(result.exit_code, 2) << result.out;
  EXPECT_NE(result.out.find("no weights to check: none of the 3 shard files "
                            "model.safetensors.index.json lists is present "
                            "(model-00000-of-00002.safetensors, model-00001-of-00002.safetensors, "
                            "model-00002-of-00002.safetensors)"),
            std::string::npos)
      << result.out;
}

// An ignore entry that matches no module is a warning with its file, pointer, dialects and the
// nearest module names; the exit code stays 0, and plan prints the same as a note.
TEST(CheckCli, AnIgnoreEntryThatMatchesNothingIsAWarning) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "quantpath_check_cli_unmatched";
  std::filesystem::remove_all(dir);
  std::filesystem::copy(Data("producers/ct_llama_w4a16_g64_sym"), dir);
  Result<Json> config = ReadJsonFile(dir / "config.json");
  ASSERT_TRUE(config.ok());
  for (auto& [key, value] : config->mutable_members()) {
    if (key != "quantization_config") continue;
    for (auto& [k, v] : value.mutable_members()) {
      if (k == "ignore") v.mutable_items().push_back(Json::String("lm_heda"));
    }
  }
  ASSERT_TRUE(WriteFileAtomically(dir / "config.json", ToJson(*config, 1)).ok());
  auto result = RunCli("check " + dir.string() + " --json");
  EXPECT_EQ(result.exit_code, 0) << result.out;
  const Json j = ParseOrDie(result.out);
  ASSERT_EQ(j.Find("config_warnings")->items().size(), 1u) << result.out;
  EXPECT_EQ(ToJson(j.Find("config_warnings")->items()[0]),
            R"({"kind": "unmatched-entry", "entry": "lm_heda", "file": "config.json", )"
            R"("pointer": "/quantization_config/ignore/1", "dialects": ["native", "vllm@0.34", )"
            R"("sglang@0.5.23"], "suggestions": ["lm_head"]})");
  EXPECT_GE(j.Find("warnings")->int_value(), 1);
  auto plan = RunCli("plan " + dir.string() + " --json");
  EXPECT_NE(
      ToJson(*ParseOrDie(plan.out).Find("notes"))
          .find("config.json#/quantization_config/ignore/1: \\\"lm_heda\\\" matches no module "
                "under native, vllm@0.34, sglang@0.5.23; nearest: lm_head"),
      std::string::npos)
      << plan.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace quantpath
