// The create_weights shape checks a plan carries, evaluated on per-rank shapes: how each linear
// class splits a site under tensor parallelism (vLLM 0.33 / SGLang 0.5.23 linear.py), and the
// fp8 block checks both releases raise (fp8_utils.py validate_fp8_block_shape, SGLang fp8.py
// validate_block_quant_shapes).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "quantpath/importers.h"
#include "quantpath/planner.h"

namespace quantpath {
namespace {

QuantPlan BlockFp8Plan(std::string_view engine, int64_t block_n = 128, int64_t block_k = 128) {
  Result<Json> root = ParseJson(
      "{\"architectures\": [\"LlamaForCausalLM\"], \"torch_dtype\": \"bfloat16\", "
      "\"quantization_config\": {\"quant_method\": \"fp8\", \"activation_scheme\": \"dynamic\", "
      "\"weight_block_size\": [" +
          std::to_string(block_n) + ", " + std::to_string(block_k) + "]}}",
      "config.json");
  EXPECT_TRUE(root.ok());
  Result<QuantPlan> plan =
      ImportPlan(ConfigSources::FromMemory({{"config.json", {}, *root}}), *ParseDialect(engine));
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : QuantPlan{};
}

LayerSite LinearSite(std::string path, std::string module_class, int64_t n, int64_t k,
                     std::vector<Leg> legs = {}) {
  LayerSite site;
  site.path = std::move(path);
  site.tp_style = TpStyleOf(module_class);
  site.module_class = std::move(module_class);
  site.shape = {{n, k}};
  site.legs = std::move(legs);
  return site;
}

// The decision after the checks, for a site the plan quantizes.
Decision Checked(const QuantPlan& plan, const LayerSite& site, int64_t tp,
                 std::optional<AttentionHeads> heads = std::nullopt) {
  Decision d = DecideSite(plan, site, false);
  EXPECT_EQ(d.kind, DecisionKind::kQuantized) << site.path;
  ApplyShapeChecks(plan, site, tp, heads, &d);
  return d;
}

// Llama-tiny's attention: 4 heads and 2 KV heads of 64.
const LayerSite kQkv = LinearSite("model.layers.0.self_attn.qkv_proj", "QKVParallelLinear", 512,
                                  256, {{"q_proj", 256}, {"k_proj", 128}, {"v_proj", 128}});
const AttentionHeads kTinyHeads{4, 2};

TEST(ShapeChecks, OnlyTheCurrentReleasesCarryThem) {
  EXPECT_FALSE(BlockFp8Plan("vllm@0.33").shape_checks.empty());
  EXPECT_FALSE(BlockFp8Plan("sglang@0.5.23").shape_checks.empty());
  EXPECT_TRUE(BlockFp8Plan("vllm@helpers").shape_checks.empty());
  EXPECT_TRUE(BlockFp8Plan("native").shape_checks.empty());
}

TEST(ShapeChecks, ColumnParallelLegsAreSplitAcrossRanks) {
  const QuantPlan sglang = BlockFp8Plan("sglang@0.5.23");
  EXPECT_EQ(Checked(sglang, kQkv, 1, kTinyHeads).kind, DecisionKind::kQuantized);
  Decision tp2 = Checked(sglang, kQkv, 2, kTinyHeads);
  EXPECT_EQ(tp2.kind, DecisionKind::kError);
  EXPECT_EQ(tp2.detail,
            "ValueError: Weight output_partition_size = 64 is not divisible by weight "
            "quantization block_n = 128.");
  EXPECT_FALSE(tp2.scheme.has_value());
  // vLLM lets a merged column-parallel layer with a ragged partition through.
  EXPECT_EQ(Checked(BlockFp8Plan("vllm@0.33"), kQkv, 2, kTinyHeads).kind, DecisionKind::kQuantized);
  const LayerSite q_b_proj =
      LinearSite("model.layers.0.self_attn.q_b_proj", "ColumnParallelLinear", 24576, 1536);
  EXPECT_EQ(Checked(BlockFp8Plan("vllm@0.33"), q_b_proj, 8).kind, DecisionKind::kQuantized);
  EXPECT_EQ(Checked(BlockFp8Plan("vllm@0.33"), q_b_proj, 256).detail,
            "ValueError: Weight output_partition_size = 96 is not divisible by weight "
            "quantization block_n = 128.");
}

// vLLM 0.33 building GLM-4.5 fp8 (128×128 blocks) at tensor-parallel size 8, as recorded: the
// shared experts' down_proj (1536 input columns, 192 per rank) fails, their gate_up_proj (two
// 192-row partitions per rank) is allowed, the attention is whole blocks.
TEST(ShapeChecks, Glm45AtTp8AsVllmBuildsIt) {
  const QuantPlan plan = BlockFp8Plan("vllm@0.33");
  const LayerSite down =
      LinearSite("model.layers.3.mlp.shared_experts.down_proj", "RowParallelLinear", 5120, 1536);
  EXPECT_EQ(Checked(plan, down, 8).detail,
            "ValueError: Weight input_size_per_partition = 192 is not divisible by weight "
            "quantization block_k = 128.");
  const LayerSite gate_up =
      LinearSite("model.layers.3.mlp.shared_experts.gate_up_proj", "MergedColumnParallelLinear",
                 3072, 5120, {{"gate_proj", 1536}, {"up_proj", 1536}});
  EXPECT_EQ(Checked(plan, gate_up, 8).kind, DecisionKind::kQuantized);
  const LayerSite qkv = LinearSite("model.layers.3.self_attn.qkv_proj", "QKVParallelLinear", 14336,
                                   5120, {{"q_proj", 12288}, {"k_proj", 1024}, {"v_proj", 1024}});
  EXPECT_EQ(Checked(plan, qkv, 8, AttentionHeads{96, 8}).kind, DecisionKind::kQuantized);
  // SGLang checks every partition.
  EXPECT_EQ(Checked(BlockFp8Plan("sglang@0.5.23"), gate_up, 8).detail,
            "ValueError: Weight output_partition_size = 192 is not divisible by weight "
            "quantization block_n = 128.");
}

TEST(ShapeChecks, FewerKvHeadsThanRanksReplicateOneHeadPerRank) {
  // 32 heads, 8 KV heads of 128: at tp 16 each rank holds 2 query heads (256 rows) and one
  // replicated KV head (128 rows), not 1024 / 16 = 64.
  const LayerSite qkv = LinearSite("model.layers.0.self_attn.qkv_proj", "QKVParallelLinear", 6144,
                                   4096, {{"q_proj", 4096}, {"k_proj", 1024}, {"v_proj", 1024}});
  const AttentionHeads heads{32, 8};
  const QuantPlan plan = BlockFp8Plan("sglang@0.5.23", 256, 128);
  Decision d = Checked(plan, qkv, 16, heads);
  EXPECT_EQ(d.kind, DecisionKind::kError);
  EXPECT_EQ(d.detail,
            "ValueError: Weight output_partition_size = 128 is not divisible by weight "
            "quantization block_n = 256.");
  EXPECT_EQ(Checked(BlockFp8Plan("sglang@0.5.23"), qkv, 16, heads).kind, DecisionKind::kQuantized);
}

TEST(ShapeChecks, RowParallelSplitsTheInput) {
  const LayerSite o_proj =
      LinearSite("model.layers.0.self_attn.o_proj", "RowParallelLinear", 256, 256);
  const QuantPlan plan = BlockFp8Plan("vllm@0.33");
  EXPECT_EQ(Checked(plan, o_proj, 2).kind, DecisionKind::kQuantized);
  Decision d = Checked(plan, o_proj, 4);
  EXPECT_EQ(d.detail,
            "ValueError: Weight input_size_per_partition = 64 is not divisible by weight "
            "quantization block_k = 128.");
}

TEST(ShapeChecks, AnUnsplitFusedLayerMayEndRaggedOnVllmOnly) {
  // DeepSeek-style 1536 + 576 through a merged replicated class at tp 1.
  const LayerSite fused =
      LinearSite("model.layers.0.self_attn.fused_qkv_a_proj", "MergedReplicatedLinear", 2112, 7168,
                 {{"q_a_proj", 1536}, {"kv_a_proj_with_mqa", 576}});
  EXPECT_EQ(Checked(BlockFp8Plan("vllm@0.33"), fused, 1).kind, DecisionKind::kQuantized);
  Decision sglang = Checked(BlockFp8Plan("sglang@0.5.23"), fused, 1);
  EXPECT_EQ(sglang.detail,
            "ValueError: Weight output_partition_size = 576 is not divisible by weight "
            "quantization block_n = 128.");
  // SGLang builds the same projection as one ReplicatedLinear: one partition, never split.
  LayerSite replicated = fused;
  replicated.module_class = "ReplicatedLinear";
  replicated.tp_style = TpStyleOf(replicated.module_class);
  EXPECT_EQ(Checked(BlockFp8Plan("sglang@0.5.23"), replicated, 8).kind, DecisionKind::kQuantized);
}

TEST(ShapeChecks, MoeExpertsSplitTheIntermediateSize) {
  LayerSite experts;
  experts.path = "model.layers.3.mlp.experts";
  experts.kind = SiteKind::kMoe;
  experts.module_class = "FusedMoE";
  experts.shape = {{2048, 7168}};  // DeepSeek-R1: moe_intermediate_size 2048
  experts.experts = 256;
  const QuantPlan plan = BlockFp8Plan("sglang@0.5.23");
  EXPECT_EQ(Checked(plan, experts, 16).kind, DecisionKind::kQuantized);
  EXPECT_EQ(Checked(plan, experts, 32).detail,
            "ValueError: The output_size of gate's and up's weight = 64 is not divisible by weight "
            "quantization block_n = 128.");
  // block_n divides, block_k does not: only checked once tp > 1.
  const QuantPlan narrow = BlockFp8Plan("sglang@0.5.23", 64, 128);
  EXPECT_EQ(Checked(narrow, experts, 1).kind, DecisionKind::kQuantized);
  EXPECT_EQ(Checked(narrow, experts, 32).detail,
            "ValueError: The input_size of down's weight = 64 is not divisible by weight "
            "quantization block_k = 128.");
  // vLLM refines the MoE block to the rank's shard instead.
  EXPECT_EQ(Checked(BlockFp8Plan("vllm@0.33"), experts, 32).kind, DecisionKind::kQuantized);
}

TEST(ShapeChecks, UnquantizedAndUnknownClassesAreLeftAlone) {
  const QuantPlan plan = BlockFp8Plan("sglang@0.5.23");
  Decision skipped;
  skipped.kind = DecisionKind::kUnquantized;
  ApplyShapeChecks(plan, kQkv, 2, kTinyHeads, &skipped);
  EXPECT_EQ(skipped.kind, DecisionKind::kUnquantized);
  LayerSite unknown = kQkv;
  unknown.module_class = "";
  unknown.tp_style = TpStyleOf(unknown.module_class);
  EXPECT_EQ(Checked(plan, unknown, 2, kTinyHeads).kind, DecisionKind::kQuantized);
}

}  // namespace
}  // namespace quantpath
