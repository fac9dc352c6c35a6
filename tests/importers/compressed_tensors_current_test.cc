// The compressed-tensors importer for the current engine releases (vllm@0.33, sglang@0.5.23):
// experts layers looked up through expert 0's projections, the release's ignore and target
// orders, the MoE method's checks and the LM head, on hand-built sites (experts layers carry an
// expert count, so their projections have checkpoint names).
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "quantpath/planner.h"
#include "src/importers/importer_list.h"

namespace quantpath {
namespace {

Result<QuantPlan> Build(std::string_view quantization_config, std::string_view dialect) {
  Result<Json> root = ParseJson(
      "{\"quantization_config\": " + std::string(quantization_config) + "}", "config.json");
  EXPECT_TRUE(root.ok()) << root.status().message();
  std::vector<SourceFile> files;
  files.push_back({"config.json", {}, root.ok() ? *root : Json::Object()});
  return CompressedTensorsImporter()->BuildPlan(ConfigSources::FromMemory(std::move(files)),
                                                *ParseDialect(dialect));
}

LayerSite Site(std::string path, std::string cls, std::vector<std::string> legs = {},
               SiteKind kind = SiteKind::kLinear) {
  LayerSite s;
  s.path = std::move(path);
  s.kind = kind;
  s.module_class = std::move(cls);
  for (std::string& leg : legs) s.legs.push_back({std::move(leg), 0});
  return s;
}
LayerSite Experts(std::string path, std::string cls) {
  LayerSite s =
      Site(std::move(path), std::move(cls), {"gate_proj", "up_proj", "down_proj"}, SiteKind::kMoe);
  s.experts = 8;
  return s;
}
LayerSite Qkv(std::string layer) {
  return Site(layer + ".self_attn.qkv_proj", "QKVParallelLinear", {"q_proj", "k_proj", "v_proj"});
}

constexpr std::string_view kFp8Args =
    R"("weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": true,
                   "dynamic": false},
       "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                             "symmetric": true, "dynamic": true})";

std::string LinearConfig(std::string_view ignore) {
  return fmt::format(
      R"({{"quant_method": "compressed-tensors", "format": "float-quantized",
           "config_groups": {{"group_0": {{"targets": ["Linear"], {}}}}}, "ignore": {}}})",
      kFp8Args, ignore);
}

constexpr std::string_view kIgnoreExperts =
    R"(["lm_head", "re:.*layers\\.1\\.mlp\\.experts.*",
        "re:.*layers\\.2\\.mlp\\.experts\\.0\\.down_proj$", "model.layers.3.mlp.experts"])";

TEST(CompressedTensorsCurrent, ExpertsThroughProjections) {
  for (auto [dialect, cls, method] :
       {std::tuple{"vllm@0.33", "RoutedExperts", "CompressedTensorsW8A8Fp8MoEMethod"},
        std::tuple{"sglang@0.5.23", "FusedMoE", "CompressedTensorsFusedMoEMethod"}}) {
    SCOPED_TRACE(dialect);
    Result<QuantPlan> plan = Build(LinearConfig(kIgnoreExperts), dialect);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    Decision d0 = DecideSite(*plan, Experts("model.layers.0.mlp.experts", cls));
    EXPECT_EQ(d0.kind, DecisionKind::kQuantized);
    EXPECT_EQ(d0.detail, fmt::format("{}[target={} group=group_0 via Linear]", method, cls));
    Decision d1 = DecideSite(*plan, Experts("model.layers.1.mlp.experts", cls));
    EXPECT_EQ(d1.kind, DecisionKind::kUnquantized);
    EXPECT_EQ(d1.detail, "UnquantizedFusedMoEMethod");
    Decision d2 = DecideSite(*plan, Experts("model.layers.2.mlp.experts", cls));
    EXPECT_EQ(d2.kind, DecisionKind::kError);
    // The engine's text, then the projections' outcomes (the planner appends them to a text
    // without site placeholders).
    EXPECT_TRUE(d2.detail.starts_with(
        "ValueError: All MoE projections need to have same quantization scheme but found "
        "multiple (model.layers.2.mlp.experts: "))
        << d2.detail;
    // The experts layer's own name is never looked up: only its projections are.
    EXPECT_EQ(DecideSite(*plan, Experts("model.layers.3.mlp.experts", cls)).kind,
              DecisionKind::kQuantized);
    Decision head = DecideSite(*plan, Site("lm_head", "ParallelLMHead", {}, SiteKind::kLmHead));
    EXPECT_EQ(head.kind, DecisionKind::kUnquantized);
    EXPECT_EQ(head.detail, "get_quant_method returned None");
  }
  // The recorded dialects match the experts layer by its own name.
  Result<QuantPlan> recorded = Build(LinearConfig(kIgnoreExperts), "sglang@helpers");
  ASSERT_TRUE(recorded.ok());
  EXPECT_EQ(DecideSite(*recorded, Experts("model.layers.3.mlp.experts", "FusedMoE")).kind,
            DecisionKind::kUnquantized);
}

TEST(CompressedTensorsCurrent, Wna16ExpertsFormat) {
  constexpr std::string_view kConfig =
      R"({"quant_method": "compressed-tensors", "format": "mixed-precision",
          "config_groups": {"group_1": {"targets": ["re:.*mlp\\.experts.*"],
            "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
                        "symmetric": true, "dynamic": false},
            "input_activations": null, "format": "pack-quantized"}}, "ignore": ["lm_head"]})";
  // vLLM reads the group's own format; SGLang's WNA16 MoE scheme the top-level one.
  Result<QuantPlan> vllm = Build(kConfig, "vllm@0.33");
  ASSERT_TRUE(vllm.ok()) << vllm.status().message();
  Decision v = DecideSite(*vllm, Experts("model.layers.0.mlp.experts", "RoutedExperts"));
  EXPECT_EQ(v.kind, DecisionKind::kQuantized);
  EXPECT_EQ(v.detail, "CompressedTensorsWNA16MoEMethod[target=re:.*mlp\\.experts.* group=group_1]");
  Result<QuantPlan> sglang = Build(kConfig, "sglang@0.5.23");
  ASSERT_TRUE(sglang.ok()) << sglang.status().message();
  Decision s = DecideSite(*sglang, Experts("model.layers.0.mlp.experts", "FusedMoE"));
  EXPECT_EQ(s.kind, DecisionKind::kError);
  EXPECT_EQ(s.detail,
            "ValueError: ('For Fused MoE layers, only ', 'pack-quantized ', 'is supported for "
            "the following bits: ', '[4, 8]')");
  // No target reaches the router gate: SGLang raises, vLLM leaves it unquantized.
  LayerSite gate = Site("model.layers.0.mlp.gate", "ReplicatedLinear");
  EXPECT_EQ(DecideSite(*sglang, gate).kind, DecisionKind::kError);
  EXPECT_EQ(DecideSite(*vllm, gate).kind, DecisionKind::kUnquantized);
}

TEST(CompressedTensorsCurrent, VllmFusedNameAndShards) {
  // 0.33 matches every entry (a regex too) against the fused name before its shards.
  Result<QuantPlan> plan = Build(LinearConfig(R"(["re:.*layers\\.0\\.self_attn\\.qkv_proj$",
                                                  "model.layers.1.self_attn.q_proj"])"),
                                 "vllm@0.33");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(DecideSite(*plan, Qkv("model.layers.0")).kind, DecisionKind::kUnquantized);
  Decision mixed = DecideSite(*plan, Qkv("model.layers.1"));
  EXPECT_EQ(mixed.kind, DecisionKind::kError);
  EXPECT_EQ(mixed.detail,
            "ValueError: Found different quantization schemes for the shards of "
            "model.layers.1.self_attn.qkv_proj. vLLM requires all to use the same scheme.");
  Decision qkv = DecideSite(*plan, Qkv("model.layers.2"));
  EXPECT_EQ(qkv.kind, DecisionKind::kQuantized);
  EXPECT_EQ(qkv.detail, "CompressedTensorsLinearMethod[target=Linear group=group_0]");
}

TEST(CompressedTensorsCurrent, VllmShardsBeforeClass) {
  // Targets by name, then through the fused shards, then by class: a "Linear" group listed first
  // loses a fused layer to the group naming its shards.
  constexpr std::string_view kConfig =
      R"({"quant_method": "compressed-tensors", "format": "float-quantized",
          "config_groups": {
            "group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float",
                        "strategy": "channel"}},
            "group_1": {"targets": ["re:.*\\.q_proj$", "re:.*\\.k_proj$", "re:.*\\.v_proj$"],
                        "weights": {"num_bits": 8, "type": "float", "strategy": "tensor"}}}})";
  Result<QuantPlan> current = Build(kConfig, "vllm@0.33");
  ASSERT_TRUE(current.ok()) << current.status().message();
  EXPECT_EQ(DecideSite(*current, Qkv("model.layers.0")).detail,
            "CompressedTensorsLinearMethod[target=re:.*\\.q_proj$ group=group_1]");
  Result<QuantPlan> recorded = Build(kConfig, "vllm@helpers");
  ASSERT_TRUE(recorded.ok()) << recorded.status().message();
  EXPECT_EQ(DecideSite(*recorded, Qkv("model.layers.0")).detail,
            "CompressedTensorsLinearMethod[target=Linear group=group_0]");
}

TEST(CompressedTensorsCurrent, SglangIgnoreDottedSuffixAndShards) {
  Result<QuantPlan> plan = Build(
      LinearConfig(R"(["mlp.down_proj", "model.layers.1.self_attn.q_proj"])"), "sglang@0.5.23");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(DecideSite(*plan, Site("model.layers.0.mlp.down_proj", "RowParallelLinear")).kind,
            DecisionKind::kUnquantized);
  Decision mixed = DecideSite(*plan, Qkv("model.layers.1"));
  EXPECT_EQ(mixed.kind, DecisionKind::kError);
  EXPECT_EQ(mixed.detail,
            "ValueError: Found different quantization schemes for ['q_proj', 'k_proj', 'v_proj'] "
            "in model.layers.1.self_attn.qkv_proj. SGLang requires all to use the same scheme.");
  // get_lm_head_scheme consults targets by name only: "Linear" leaves the head unquantized.
  Result<QuantPlan> open = Build(LinearConfig("[]"), "sglang@0.5.23");
  ASSERT_TRUE(open.ok());
  EXPECT_EQ(DecideSite(*open, Site("lm_head", "ParallelLMHead", {}, SiteKind::kLmHead)).kind,
            DecisionKind::kUnquantized);
}

}  // namespace
}  // namespace quantpath
