// fp8 in the versioned dialects: vLLM 0.33.0 honours a directly listed fused name, SGLang 0.5.23
// splits fused sites without a packed mapping by its built-in shard table. The recorded dialects
// keep their behaviour (the oracle files under cases/ and releases/ cover the rest).
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "quantpath/importers.h"
#include "quantpath/planner.h"
#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

using family_test::Contains;

QuantPlan Plan(std::string_view ignored_layers, std::string_view dialect) {
  std::string text = R"({"quantization_config": {"quant_method": "fp8",
      "activation_scheme": "dynamic", "weight_block_size": [128, 128], "ignored_layers": )" +
                     std::string(ignored_layers) + "}}";
  Result<Json> root = ParseJson(text, "config.json");
  EXPECT_TRUE(root.ok()) << root.status().message();
  std::vector<SourceFile> files;
  files.push_back({"config.json", {}, root.ok() ? *root : Json::Object()});
  Result<QuantPlan> plan =
      ImportPlan(ConfigSources::FromMemory(std::move(files)), *ParseDialect(dialect));
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : QuantPlan{};
}

// A linear site; without legs when the model's packed mapping does not name its last segment.
LayerSite Linear(std::string path, std::vector<std::string> legs = {}) {
  LayerSite site;
  site.path = std::move(path);
  site.kind = SiteKind::kLinear;
  for (std::string& leg : legs) site.legs.push_back({std::move(leg), 128});
  return site;
}

DecisionKind Decide(const QuantPlan& plan, const LayerSite& site) {
  return DecideSite(plan, site).kind;
}

TEST(Fp8Vllm033, ADirectlyListedFusedNameIsHonouredFirst) {
  const LayerSite qkv = Linear("model.layers.0.self_attn.qkv_proj", {"q_proj", "k_proj", "v_proj"});
  constexpr std::string_view kFused = R"(["model.layers.0.self_attn.qkv_proj"])";
  EXPECT_EQ(Decide(Plan(kFused, "vllm@0.33"), qkv), DecisionKind::kUnquantized);
  EXPECT_EQ(Decide(Plan(kFused, "vllm@helpers"), qkv), DecisionKind::kQuantized);
  // Not listed directly: the shards decide and must agree, as before.
  constexpr std::string_view kOnlyQ = R"(["model.layers.0.self_attn.q_proj"])";
  Decision d = DecideSite(Plan(kOnlyQ, "vllm@0.33"), qkv);
  EXPECT_EQ(d.kind, DecisionKind::kError);
  EXPECT_TRUE(Contains(d.detail, "some but not all shards of model.layers.0.self_attn.qkv_proj"))
      << d.detail;
  // Exact names only: a fused name of another layer does not reach this one.
  EXPECT_EQ(Decide(Plan(R"(["self_attn.qkv_proj"])", "vllm@0.33"), qkv), DecisionKind::kQuantized);
}

TEST(Fp8Sglang0523, FusedSitesWithoutAMappingUseTheBuiltInShards) {
  const QuantPlan plan = Plan(R"(["model.layers.0.self_attn.q_proj", "self_attn.k_proj",
      "layers.0.self_attn.v_proj", "model.layers.1.self_attn.qkv_proj", "layers.1.mlp.gate_proj",
      "mlp.up_proj"])",
                              "sglang@0.5.23");
  // q, k and v are listed under parents that all end the site's parent: every shard is skipped.
  Decision q0 = DecideSite(plan, Linear("model.layers.0.self_attn.qkv_proj"));
  EXPECT_EQ(q0.kind, DecisionKind::kUnquantized);
  EXPECT_EQ(q0.detail, "UnquantizedLinearMethod");
  EXPECT_TRUE(Contains(q0.rule, "built-in shard table")) << q0.rule;
  // Listing the fused name itself does not skip it: only "self_attn.k_proj" reaches its shards,
  // as it does for layer 2.
  EXPECT_EQ(Decide(plan, Linear("model.layers.1.self_attn.qkv_proj")), DecisionKind::kError);
  Decision q2 = DecideSite(plan, Linear("model.layers.2.self_attn.qkv_proj"));
  EXPECT_EQ(q2.kind, DecisionKind::kError);
  EXPECT_EQ(q2.detail,
            "Detected some but not all shards of model.layers.2.self_attn.qkv_proj are quantized. "
            "All shards of fused layers to have the same precision.");
  // gate from "layers.1.mlp.gate_proj", up from the bare-parent "mlp.up_proj".
  EXPECT_EQ(Decide(plan, Linear("model.layers.1.mlp.gate_up_proj")), DecisionKind::kUnquantized);
  EXPECT_EQ(Decide(plan, Linear("model.layers.0.mlp.gate_up_proj")), DecisionKind::kError);
  // A segment boundary is required: "xmlp" is not "mlp".
  EXPECT_EQ(Decide(plan, Linear("model.layers.0.xmlp.gate_up_proj")), DecisionKind::kQuantized);
  // Unfused sites keep the whole-segment test.
  EXPECT_EQ(Decide(plan, Linear("model.layers.0.self_attn.q_proj")), DecisionKind::kUnquantized);
}

TEST(Fp8Sglang0523, AnEntryBeforeTheFusedNameReachesEveryShard) {
  const QuantPlan plan = Plan(R"(["model.layers.0.self_attn", "layers.3"])", "sglang@0.5.23");
  EXPECT_EQ(Decide(plan, Linear("model.layers.0.self_attn.qkv_proj")), DecisionKind::kUnquantized);
  EXPECT_EQ(Decide(plan, Linear("model.layers.3.mlp.gate_up_proj")), DecisionKind::kUnquantized);
  EXPECT_EQ(Decide(plan, Linear("model.layers.1.self_attn.qkv_proj")), DecisionKind::kQuantized);
}

TEST(Fp8Sglang0523, SitesWithLegsFollowTheModelMapping) {
  // With legs (the model maps qkv_proj), only the legs are looked up, in both SGLang dialects.
  const LayerSite qkv = Linear("model.layers.0.self_attn.qkv_proj", {"q_proj", "k_proj", "v_proj"});
  constexpr std::string_view kFused = R"(["model.layers.0.self_attn.qkv_proj"])";
  for (std::string_view dialect : {"sglang@helpers", "sglang@0.5.23"}) {
    EXPECT_EQ(Decide(Plan(kFused, dialect), qkv), DecisionKind::kQuantized) << dialect;
  }
  constexpr std::string_view kAll = R"(["q_proj", "k_proj", "v_proj"])";
  EXPECT_EQ(Decide(Plan(kAll, "sglang@0.5.23"), qkv), DecisionKind::kUnquantized);
}

TEST(Fp8SglangRecorded, FusedSitesWithoutAMappingAreMatchedAsThemselves) {
  const QuantPlan plan =
      Plan(R"(["model.layers.1.self_attn.qkv_proj", "q_proj"])", "sglang@helpers");
  EXPECT_EQ(Decide(plan, Linear("model.layers.1.self_attn.qkv_proj")), DecisionKind::kUnquantized);
  EXPECT_EQ(Decide(plan, Linear("model.layers.0.self_attn.qkv_proj")), DecisionKind::kQuantized);
}

}  // namespace
}  // namespace quantpath
