// ModelSlim as SGLang 0.5.23 serves it (sglang@0.5.23): the description rewrites (DeepSeek-V4
// names, block_sparse_moe twins, DSpark MTP aliases), the lookup candidates, the linear and MoE
// scheme tables and their errors, and the RMSNorm note. The descriptions are synthetic (no
// published one is in the corpus); the expected decisions follow the cases recorded from SGLang
// 0.5.23 in tests/data/oracle/releases/sglang-0.5.23/cases/sglang-modelslim.json, which match
// --verify checks whole.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "quantpath/importers.h"
#include "quantpath/planner.h"
#include "src/importers/importer_list.h"

namespace quantpath {
namespace {

Result<QuantPlan> Build(std::string_view description) {
  Result<Json> root = ParseJson(description, "quant_model_description.json");
  EXPECT_TRUE(root.ok()) << root.status().message();
  std::vector<SourceFile> files;
  files.push_back({"quant_model_description.json", {}, root.ok() ? *root : Json::Object()});
  return ModelSlimImporter()->BuildPlan(ConfigSources::FromMemory(std::move(files)),
                                        *ParseDialect("sglang@0.5.23"));
}

LayerSite Site(std::string path, SiteKind kind = SiteKind::kLinear) {
  LayerSite s;
  s.path = std::move(path);
  s.kind = kind;
  return s;
}

Decision Decide(const QuantPlan& plan, std::string path, SiteKind kind = SiteKind::kLinear) {
  return DecideSite(plan, Site(std::move(path), kind));
}

bool HasNote(const QuantPlan& plan, std::string_view text) {
  for (const std::string& n : plan.notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(ModelSlimSglang0523, LinearTypesFloatLegsAndFallbacks) {
  Result<QuantPlan> plan = Build(R"({
    "model.layers.0.self_attn.q_proj.weight": "W8A8_MXFP8",
    "model.layers.0.self_attn.k_proj.weight": "W8A8_MXFP8",
    "model.layers.0.self_attn.v_proj.weight": "W8A8_MXFP8",
    "model.layers.0.self_attn.o_proj.weight": "W4A8_DYNAMIC",
    "model.layers.0.mlp.gate_proj.weight": "FLOAT",
    "model.layers.0.mlp.up_proj.weight": "W8A8",
    "model.layers.1.mlp.gate_proj.weight": "FLOAT",
    "model.layers.1.mlp.up_proj.weight": "FLOAT",
    "ignore": ["model.layers.0.self_attn.qkv_proj"]})");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  // The loader's NPU "model" section fuses q/k/v; the first shard's key gives the scheme.
  Decision qkv = Decide(*plan, "model.layers.0.self_attn.qkv_proj");
  EXPECT_EQ(qkv.kind, DecisionKind::kQuantized);
  EXPECT_EQ(qkv.detail, "ModelSlimLinearMethod[ModelSlimMXFP8Scheme]");
  // W4A8_DYNAMIC is an MoE type only: a warning and UnquantizedLinearMethod, not an error.
  EXPECT_EQ(Decide(*plan, "model.layers.0.self_attn.o_proj").detail, "UnquantizedLinearMethod");
  EXPECT_EQ(Decide(*plan, "model.layers.0.mlp.gate_up_proj").kind, DecisionKind::kError);
  EXPECT_EQ(Decide(*plan, "model.layers.1.mlp.gate_up_proj").kind, DecisionKind::kUnquantized);
  EXPECT_EQ(Decide(*plan, "model.layers.7.mlp.down_proj").kind, DecisionKind::kUnquantized);
  EXPECT_EQ(Decide(*plan, "lm_head", SiteKind::kLmHead).kind, DecisionKind::kUnquantized);
  EXPECT_TRUE(HasNote(*plan, "ignore is read but never consulted"));
}

TEST(ModelSlimSglang0523, MoeSchemesAndTheirErrors) {
  Result<QuantPlan> plan = Build(R"({
    "model.layers.0.mlp.experts.0.gate_proj.weight": "W4A8_MXFP",
    "model.layers.0.mlp.experts.0.up_proj.weight": "W4A8_MXFP",
    "model.layers.0.mlp.experts.0.down_proj.weight": "W8A8_DYNAMIC",
    "model.layers.1.mlp.experts.0.gate_proj.weight": "W8A8_DYNAMIC",
    "model.layers.1.mlp.experts.0.up_proj.weight": "W4A8_DYNAMIC",
    "model.layers.1.mlp.experts.0.down_proj.weight": "W8A8_DYNAMIC",
    "model.layers.2.block_sparse_moe.experts.0.w1.weight": "W4A4_DYNAMIC",
    "model.layers.2.block_sparse_moe.experts.0.w3.weight": "W4A4_DYNAMIC",
    "model.layers.2.block_sparse_moe.experts.0.w2.weight": "W4A4_DYNAMIC",
    "model.layers.3.mlp.experts.0.gate_proj.weight": "FLOAT",
    "model.layers.3.mlp.experts.0.down_proj.weight": "FLOAT"})");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(Decide(*plan, "model.layers.0.mlp.experts", SiteKind::kMoe).detail,
            "ModelSlimFusedMoEMethod[W13=ModelSlimW4A8MXFP4MoE W2=ModelSlimW8A8Int8MoE]");
  EXPECT_EQ(Decide(*plan, "model.layers.1.mlp.experts", SiteKind::kMoe).detail,
            "ValueError: Mismatched ModelSlim quantization for W13 in layer "
            "model.layers.1.mlp.experts: {'model.layers.1.mlp.experts.0.gate_proj.weight': "
            "'W8A8_DYNAMIC', 'model.layers.1.mlp.experts.0.up_proj.weight': 'W4A8_DYNAMIC'}");
  // mlp → block_sparse_moe candidate, then the w1/w3/w2 names.
  EXPECT_EQ(Decide(*plan, "model.layers.2.mlp.experts", SiteKind::kMoe).kind,
            DecisionKind::kQuantized);
  EXPECT_EQ(Decide(*plan, "model.layers.3.mlp.experts", SiteKind::kMoe).detail,
            "ValueError: Unsupported ModelSlim MoE schemes for layer model.layers.3.mlp.experts: "
            "W13='FLOAT', W2='FLOAT'");
  // A language_model. prefix is dropped to find layer 2's keys.
  EXPECT_EQ(Decide(*plan, "language_model.model.layers.2.mlp.experts", SiteKind::kMoe).kind,
            DecisionKind::kQuantized);
  EXPECT_EQ(Decide(*plan, "model.layers.9.mlp.experts", SiteKind::kMoe).kind, DecisionKind::kError);
}

TEST(ModelSlimSglang0523, MissingMoeDescriptionListsEveryPattern) {
  Result<QuantPlan> plan = Build(R"({
    "model.layers.0.mlp.experts.0.gate_proj.weight": "W8A8_DYNAMIC"})");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(Decide(*plan, "model.layers.0.mlp.experts", SiteKind::kMoe).detail,
            "ValueError: Missing ModelSlim MoE quantization description for layer "
            "model.layers.0.mlp.experts: model.layers.0.mlp.experts (gate_proj/up_proj=found, "
            "down_proj=missing); model.layers.0.mlp.experts (w1/w3=missing, w2=missing); "
            "model.layers.0.block_sparse_moe.experts (gate_proj/up_proj=missing, "
            "down_proj=missing); model.layers.0.block_sparse_moe.experts (w1/w3=missing, "
            "w2=missing); language_model.model.layers.0.mlp.experts (gate_proj/up_proj=missing, "
            "down_proj=missing); language_model.model.layers.0.mlp.experts (w1/w3=missing, "
            "w2=missing); language_model.model.layers.0.block_sparse_moe.experts "
            "(gate_proj/up_proj=missing, down_proj=missing); "
            "language_model.model.layers.0.block_sparse_moe.experts (w1/w3=missing, w2=missing)");
}

TEST(ModelSlimSglang0523, DsparkMtpAliases) {
  Result<QuantPlan> plan = Build(R"({
    "mtp.0.attn.q_proj.weight": "W8A8_DYNAMIC",
    "mtp.0.ffn.experts.0.w1.weight": "W8A8_DYNAMIC",
    "mtp.0.ffn.experts.0.w3.weight": "W8A8_DYNAMIC",
    "mtp.0.ffn.experts.0.w2.weight": "W8A8_DYNAMIC",
    "mtp.0.head.weight": "W8A8_DYNAMIC"})");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(Decide(*plan, "stages.0.self_attn.q_proj").kind, DecisionKind::kQuantized);
  EXPECT_EQ(Decide(*plan, "mtp.0.attn.q_proj").kind, DecisionKind::kQuantized);
  EXPECT_EQ(Decide(*plan, "stages.0.mlp.experts", SiteKind::kMoe).kind, DecisionKind::kQuantized);
  // The stage's own head copy gets no alias: the draft model uses the target's head.
  EXPECT_EQ(Decide(*plan, "stages.0.head").kind, DecisionKind::kUnquantized);
}

TEST(ModelSlimSglang0523, DeepseekV4KeysAreRenamedToHuggingFaceNames) {
  Result<QuantPlan> plan = Build(R"({
    "hc_head_fn.weight": "FLOAT",
    "layers.0.attn.wq_a.weight": "W8A8_DYNAMIC",
    "layers.0.ffn.shared_experts.w2.weight": "W8A8",
    "head.weight": "W8A8_DYNAMIC"})");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(Decide(*plan, "model.layers.0.self_attn.wq_a").kind, DecisionKind::kQuantized);
  EXPECT_EQ(Decide(*plan, "layers.0.attn.wq_a").kind, DecisionKind::kUnquantized);
  EXPECT_EQ(Decide(*plan, "model.layers.0.mlp.shared_experts.down_proj").detail,
            "ModelSlimLinearMethod[ModelSlimW8A8Int8]");
  EXPECT_TRUE(HasNote(*plan, "DeepSeek-V4"));
}

TEST(ModelSlimSglang0523, NormBiasKeysPatchRmsNorm) {
  Result<QuantPlan> plan = Build(R"({
    "model.layers.0.self_attn.o_proj.weight": "W8A8",
    "model.layers.0.input_layernorm.bias": "W8A8"})");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_TRUE(HasNote(*plan, "SGLang patches RMSNorm for the whole model"));
  Result<QuantPlan> none = Build(R"({"model.layers.0.self_attn.o_proj.weight": "W8A8"})");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(HasNote(*none, "RMSNorm"));
}

}  // namespace
}  // namespace quantpath
