// The explain trace, one test per matcher kind the importers use: each names the matcher, the
// pattern, the file and JSON pointer it came from, whether it hit, and why.
#include <gtest/gtest.h>

#include "quantpath/report.h"

namespace quantpath {
namespace {

struct Step {
  std::string matcher, pattern, file, pointer, result, reason;
};

// Decides `site` with the plan built from config.json's `quantization_config` (or a standalone
// file) under `dialect`, and returns the trace as explain --json prints it.
std::vector<Step> Explain(const std::string& file, const std::string& json,
                          const std::string& dialect, const LayerSite& site) {
  std::vector<SourceFile> files;
  Result<Json> root = ParseJson(json, file);
  EXPECT_TRUE(root.ok()) << root.status().message();
  files.push_back({file, {}, *root});
  ConfigSources sources = ConfigSources::FromMemory(std::move(files));
  Result<QuantPlan> plan = ImportPlan(sources, *ParseDialect(dialect));
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  if (!plan.ok()) return {};
  Json trace = TraceToJson(DecideSite(*plan, site, true).trace);
  std::vector<Step> steps;
  for (const Json& s : trace.items()) {
    EXPECT_EQ(s.members().size(), 6u);
    steps.push_back({s.Find("matcher")->string_value(), s.Find("pattern")->string_value(),
                     s.Find("file")->string_value(), s.Find("pointer")->string_value(),
                     s.Find("result")->string_value(), s.Find("reason")->string_value()});
  }
  return steps;
}

LayerSite Linear(std::string path, std::string module_class = "RowParallelLinear") {
  LayerSite site;
  site.path = std::move(path);
  site.module_class = std::move(module_class);
  return site;
}

// The first step with `matcher` and `result`, or a failure listing the trace.
const Step* Find(const std::vector<Step>& steps, const std::string& matcher,
                 const std::string& result) {
  for (const Step& s : steps) {
    if (s.matcher == matcher && s.result == result) return &s;
  }
  std::string all;
  for (const Step& s : steps) all += s.matcher + " " + s.pattern + " " + s.result + "\n";
  ADD_FAILURE() << "no " << matcher << " step that is a " << result << " in:\n" << all;
  return nullptr;
}

TEST(ExplainTrace, Exact) {
  auto steps = Explain("config.json",
                       R"({"quantization_config": {"quant_method": "fp8", "activation_scheme":
                       "dynamic", "ignored_layers": ["model.layers.1.self_attn.o_proj",
                       "model.layers.0.self_attn.o_proj"]}})",
                       "vllm@helpers", Linear("model.layers.0.self_attn.o_proj"));
  const Step* miss = Find(steps, "exact", "miss");
  const Step* hit = Find(steps, "exact", "hit");
  ASSERT_TRUE(miss && hit);
  EXPECT_EQ(hit->pattern, "model.layers.0.self_attn.o_proj");
  EXPECT_EQ(hit->file, "config.json");
  EXPECT_EQ(hit->pointer, "/quantization_config/ignored_layers/1");
  EXPECT_NE(hit->reason.find("matches"), std::string::npos);
}

TEST(ExplainTrace, LeadingPath) {
  auto steps = Explain("config.json",
                       R"({"quantization_config": {"quant_method": "bitsandbytes",
                       "load_in_4bit": true, "bnb_4bit_quant_type": "nf4",
                       "llm_int8_skip_modules": ["model.layers.1", "mlp"]}})",
                       "vllm@helpers", Linear("model.layers.0.mlp.down_proj"));
  const Step* hit = Find(steps, "leading_path", "hit");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->pattern, "mlp");
  EXPECT_EQ(hit->pointer, "/quantization_config/llm_int8_skip_modules/1");
}

TEST(ExplainTrace, Substring) {
  auto steps = Explain("config.json",
                       R"({"quantization_config": {"quant_method": "awq", "bits": 4,
                       "group_size": 128, "zero_point": true, "version": "gemm",
                       "modules_to_not_convert": ["o_proj"]}})",
                       "sglang@helpers", Linear("model.layers.0.self_attn.o_proj"));
  const Step* hit = Find(steps, "substring", "hit");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->pointer, "/quantization_config/modules_to_not_convert/0");
}

TEST(ExplainTrace, ReverseSubstring) {
  LayerSite experts = Linear("model.layers.3.mlp.experts", "FusedMoE");
  experts.kind = SiteKind::kMoe;
  auto steps = Explain("config.json",
                       R"({"quantization_config": {"quant_method": "fp8", "activation_scheme":
                       "dynamic", "ignored_layers": ["model.layers.3.mlp.experts.0.gate_proj"]}})",
                       "vllm@helpers", experts);
  const Step* hit = Find(steps, "reverse_substring", "hit");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->pattern, "model.layers.3.mlp.experts.0.gate_proj");
}

TEST(ExplainTrace, SubstringIgnoringCase) {
  auto steps = Explain("config.json",
                       R"({"quantization_config": {"quant_method": "compressed-tensors",
                       "format": "float-quantized", "ignore": ["O_PROJ"], "config_groups":
                       {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type":
                       "float", "strategy": "tensor", "symmetric": true, "dynamic": false}}}}})",
                       "sglang@helpers", Linear("model.layers.0.self_attn.o_proj"));
  const Step* hit = Find(steps, "substring_ignore_case", "hit");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->pointer, "/quantization_config/ignore/0");
}

TEST(ExplainTrace, RegexMatch) {
  auto steps = Explain("config.json",
                       R"({"quantization_config": {"quant_method": "compressed-tensors",
                       "format": "pack-quantized", "config_groups": {"group_0": {"targets":
                       ["re:.*down_proj"], "weights": {"num_bits": 4, "type": "int", "strategy":
                       "group", "group_size": 128, "symmetric": true, "dynamic": false}}}}})",
                       "native", Linear("model.layers.0.mlp.down_proj"));
  const Step* hit = Find(steps, "regex_match", "hit");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->pointer, "/quantization_config/config_groups/group_0/targets/0");
}

TEST(ExplainTrace, RegexFullMatch) {
  auto steps = Explain("hf_quant_config.json",
                       R"({"producer": {"name": "modelopt", "version": "0.23.0"},
                       "quantization": {"quant_algo": "FP8", "exclude_modules":
                       ["model.layers.0.self_attn*"]}})",
                       "sglang@helpers", Linear("model.layers.0.self_attn.o_proj"));
  const Step* hit = Find(steps, "regex_fullmatch", "hit");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->file, "hf_quant_config.json");
  EXPECT_EQ(hit->pointer, "/quantization/exclude_modules/0");
}

TEST(ExplainTrace, Glob) {
  auto steps = Explain("hf_quant_config.json",
                       R"({"producer": {"name": "modelopt", "version": "0.23.0"},
                       "quantization": {"quant_algo": "FP8", "exclude_modules":
                       ["lm_head", "*.self_attn.o_*"]}})",
                       "native", Linear("model.layers.0.self_attn.o_proj"));
  const Step* miss = Find(steps, "glob", "miss");
  const Step* hit = Find(steps, "glob", "hit");
  ASSERT_TRUE(miss && hit);
  EXPECT_EQ(hit->pattern, "*.self_attn.o_*");
  EXPECT_EQ(hit->pointer, "/quantization/exclude_modules/1");
}

TEST(ExplainTrace, ClassName) {
  auto steps = Explain("config.json",
                       R"({"quantization_config": {"quant_method": "compressed-tensors",
                       "format": "float-quantized", "config_groups": {"group_0": {"targets":
                       ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy":
                       "channel", "symmetric": true, "dynamic": false}}}}})",
                       "vllm@helpers", Linear("model.layers.0.self_attn.o_proj"));
  const Step* hit = Find(steps, "class_name", "hit");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->pattern, "Linear");
  EXPECT_NE(hit->reason.find("RowParallelLinear"), std::string::npos) << hit->reason;
}

}  // namespace
}  // namespace quantpath
