// `quantpath diff`: the divergences ENGINES.md predicts between native, vLLM and SGLang.
#include <gtest/gtest.h>

#include "tests/cli/cli_test_util.h"

namespace quantpath {
namespace {

using testing::RunCli;

// The block of `diff` output for one aligned layer key.
std::string Block(const std::string& out, const std::string& key) {
  size_t start = out.find(key + "\n");
  if (start == std::string::npos) return "";
  size_t end = out.find("\nmodel.", start + key.size());
  size_t summary = out.find(" layers decided differently", start);
  return out.substr(start, std::min(end, summary) - start);
}

// DeepSeek-R1 NVFP4 excludes kv_a_proj_with_mqa in every layer but names `self_attn.q_proj` (a
// module DeepSeek-R1 does not have) instead of q_a_proj. Native and vLLM see a fused layer with one
// leg excluded (an error); SGLang's config carries no packed mapping and its MLA-tail rule excludes
// every fused_qkv_a_proj_with_mqa through any layer's entry, so it loads.
TEST(DiffCli, DeepSeekR1Nvfp4MlaTailRule) {
  auto r = RunCli("diff tests/data/diff/deepseek-r1-nvfp4");
  ASSERT_EQ(r.exit_code, 1) << r.out;
  std::string layer5 = Block(r.out, "model.layers.5.self_attn.{q_a_proj+kv_a_proj_with_mqa}");
  ASSERT_FALSE(layer5.empty()) << r.out.substr(0, 3000);
  EXPECT_NE(layer5.find("native  error"), std::string::npos) << layer5;
  EXPECT_NE(layer5.find("vllm    error"), std::string::npos) << layer5;
  EXPECT_NE(layer5.find("Detected some but not all shards of "
                        "model.layers.5.self_attn.fused_qkv_a_proj are quantized"),
            std::string::npos)
      << layer5;
  EXPECT_NE(layer5.find("sglang  unquantized"), std::string::npos) << layer5;
  // The entry that decided layer 5 under SGLang belongs to layer 0: the index is ignored.
  EXPECT_NE(layer5.find("exclude_modules \"model.layers.0.self_attn.kv_a_proj_with_mqa\""),
            std::string::npos)
      << layer5;
  EXPECT_NE(r.out.find("vllm: errors at model.layers.0.self_attn.fused_qkv_a_proj: ValueError"),
            std::string::npos);
  EXPECT_NE(r.out.find("sglang: loads\n"), std::string::npos);
  // Routed experts are NVFP4 in every dialect: no divergence reported for them.
  EXPECT_EQ(r.out.find("model.layers.5.mlp.experts\n"), std::string::npos);
}

// ENGINES.md section 4: a ModelOpt `mlp.gate` entry is a substring of `mlp.gate_up_proj` for vLLM,
// but neither a whole segment for SGLang nor an fnmatch of the full path for ModelOpt itself.
TEST(DiffCli, SubstringVersusSegmentExclusion) {
  auto r = RunCli("diff tests/data/diff/llama-modelopt-fp8-gate");
  ASSERT_EQ(r.exit_code, 1) << r.out;
  std::string block = Block(r.out, "model.layers.0.mlp.{gate_proj+up_proj}");
  ASSERT_FALSE(block.empty()) << r.out;
  EXPECT_NE(block.find("native  quantized"), std::string::npos) << block;
  EXPECT_NE(block.find("vllm    unquantized"), std::string::npos) << block;
  EXPECT_NE(block.find("sglang  quantized"), std::string::npos) << block;
  EXPECT_NE(r.out.find("vllm: loads with 2 layers unquantized that the file meant to quantize"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("native: loads\n"), std::string::npos);
  EXPECT_NE(r.out.find("sglang: loads\n"), std::string::npos);
}

TEST(DiffCli, UnusableInput) {
  EXPECT_EQ(RunCli("diff /nonexistent").exit_code, 2);
  EXPECT_EQ(RunCli("diff").exit_code, 2);
}

}  // namespace
}  // namespace quantpath
