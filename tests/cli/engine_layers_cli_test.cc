// The engines' own layer lists through the CLI: rows with an empty engine prefix carry their
// checkpoint path in `plan`, `explain` resolves them by it, `diff` points them out, and
// `--speculative` builds the MTP layer as the engine's draft model names it.
#include <gtest/gtest.h>

#include "quantpath/base.h"
#include "tests/cli/cli_test_util.h"

namespace quantpath {
namespace {

using testing::ParseOrDie;
using testing::RunCli;

constexpr char kLlama[] = "tests/data/corpus/TheBloke__Llama-2-13B-chat-GPTQ";
constexpr char kPhi[] = "tests/data/corpus/KeshavArvindh__phi-2-GPTQ-optimum";
constexpr char kDeepseek[] = "tests/data/corpus/deepseek-ai__DeepSeek-R1";

const Json& Get(const Json& object, std::string_view key) {
  static const Json kNull;
  const Json* value = object.Find(key);
  return value != nullptr ? *value : kNull;
}

TEST(EngineLayersCli, PlanRowsCarryTheCheckpointPath) {
  auto r = RunCli(std::string("plan ") + kLlama + " --engine vllm@0.33 --json");
  ASSERT_EQ(r.exit_code, 0);
  const Json plan = ParseOrDie(r.out);
  const Json& first = Get(plan, "layers").items().front();
  EXPECT_EQ(Get(first, "path").string_value(), "");
  EXPECT_EQ(Get(first, "checkpoint_path").string_value(), "model.embed_tokens");
  const Json& second = Get(plan, "layers").items()[1];
  EXPECT_EQ(Get(second, "checkpoint_path").string_value(), "model.layers.0.self_attn.qkv_proj");
  // The table shows the empty prefix as "" beside the checkpoint path.
  auto table = RunCli(std::string("plan ") + kLlama + " --engine vllm@0.33");
  EXPECT_NE(table.out.find("\n\"\"  "), std::string::npos) << table.out.substr(0, 600);
  EXPECT_NE(table.out.find("checkpoint_path"), std::string::npos);
}

TEST(EngineLayersCli, ExplainResolvesAnEmptyPrefixByItsCheckpointPath) {
  auto r =
      RunCli(std::string("explain ") + kLlama + " model.embed_tokens --engine vllm@0.33 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const Json explained = ParseOrDie(r.out);
  EXPECT_EQ(Get(explained, "path").string_value(), "");
  EXPECT_EQ(Get(explained, "checkpoint_path").string_value(), "model.embed_tokens");
  EXPECT_EQ(Get(explained, "resolved").string_value(), "model.embed_tokens is built as \"\"");
  EXPECT_EQ(Get(explained, "kind").string_value(), "embedding");
}

TEST(EngineLayersCli, DiffPointsOutEmptyPrefixes) {
  auto r = RunCli(std::string("diff ") + kPhi + " --engines sglang@0.5.23");
  ASSERT_NE(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("note: sglang@0.5.23 builds 129 layers with an empty prefix, so no "
                       "name-based rule of the config reaches them, e.g. "
                       "model.layers.0.self_attn.qkv_proj"),
            std::string::npos)
      << r.out;
}

TEST(EngineLayersCli, SpeculativeBuildsTheDraftModel) {
  auto plain = RunCli(std::string("plan ") + kDeepseek + " --engine sglang@0.5.23 --json");
  auto mtp =
      RunCli(std::string("plan ") + kDeepseek + " --engine sglang@0.5.23 --speculative --json");
  ASSERT_EQ(plain.exit_code, 0);
  ASSERT_EQ(mtp.exit_code, 0);
  const Json a = ParseOrDie(plain.out);
  const Json b = ParseOrDie(mtp.out);
  EXPECT_EQ(Get(a, "layers").items().back().Find("path")->string_value(), "lm_head");
  const Json& head = Get(b, "layers").items().back();
  EXPECT_EQ(Get(head, "path").string_value(), "model.shared_head.head");
  EXPECT_EQ(Get(head, "checkpoint_path").string_value(), "model.layers.61.shared_head.head");
  // The MTP weights are in other_params without --speculative: the totals agree.
  const auto total = [](const Json& plan) {
    const Json& s = Get(plan, "summary");
    return Get(s, "params").int_value() + Get(s, "other_params").int_value();
  };
  EXPECT_EQ(total(a), total(b));
  EXPECT_EQ(Get(Get(b, "summary"), "layers").int_value(),
            Get(Get(a, "summary"), "layers").int_value() + 8);
}

// DeepSeek-R1 with the NVFP4 ModelOpt file (tests/data/diff/deepseek-r1-nvfp4) excludes
// `model.layers.61*`, the MTP layer as the checkpoint names it. Native and vLLM build it under
// that name, so it stays unquantized; SGLang's draft model builds `model.decoder.*` and its head
// `model.shared_head.head`, which the glob does not reach: they are quantized.
TEST(EngineLayersCli, SglangMtpHeadEscapesTheMtpExclusion) {
  const std::string folder = "tests/data/diff/deepseek-r1-nvfp4";
  const auto last = [&](const std::string& engine) {
    auto r = RunCli("plan " + folder + " --engine " + engine + " --speculative --json");
    EXPECT_LE(r.exit_code, 1) << engine;
    const Json plan = ParseOrDie(r.out);
    return Get(plan, "layers").items().empty() ? Json() : Get(plan, "layers").items().back();
  };
  const Json sglang = last("sglang@0.5.23");
  EXPECT_EQ(Get(sglang, "path").string_value(), "model.shared_head.head");
  EXPECT_EQ(Get(sglang, "decision").string_value(), "quantized");
  EXPECT_EQ(Get(Get(sglang, "scheme"), "name").string_value(), "w4a4-nvfp4");
  const Json native = last("native");
  EXPECT_EQ(Get(native, "path").string_value(), "model.layers.61.shared_head.head");
  EXPECT_EQ(Get(native, "decision").string_value(), "unquantized");
}

}  // namespace
}  // namespace quantpath
