// `match` on case layers that carry their logical shape (tests/data/oracle/README.md): the
// method's create_weights shape checks run at the case's tp_size on that shape, and malformed
// shapes are errors naming the file, case and layer. Texts and sizes are those of the GLM-4.5
// fp8 block-128 recordings at tp 8 (tests/data/oracle/releases/*/models/*-glm-4-5-fp8-tp8.json).
#include <gtest/gtest.h>

#include "quantpath/pipeline.h"

namespace quantpath {
namespace {

constexpr char kFile[] = "cases.json";

// One fp8 block-128 case of `engine` ("vllm" or "sglang", their current releases) at tp 8 with
// `layers` (a JSON list) and the model's packed mapping.
std::string Case(const std::string& engine, const std::string& layers) {
  const std::string commit = engine == "vllm" ? "vllm 0.33.0 (model build)" : "sglang 0.5.23";
  return R"([{"id": "c1", "engine": ")" + engine + R"(", "engine_commit": ")" + commit +
         R"(", "format": "fp8",
    "config": {"quant_method": "fp8", "activation_scheme": "dynamic",
               "weight_block_size": [128, 128]},
    "packed_modules_mapping": {"qkv_proj": ["q_proj", "k_proj", "v_proj"],
                               "gate_up_proj": ["gate_proj", "up_proj"]},
    "layers": )" +
         layers + R"(, "extra_inputs": {"tp_size": 8}}])";
}

Result<std::vector<CaseDecision>> Match(const std::string& text) {
  QP_ASSIGN_OR_RETURN(Json cases, ParseJson(text, kFile));
  QP_ASSIGN_OR_RETURN(std::vector<CaseResult> results, MatchCases(cases, kFile, std::nullopt));
  if (results.size() != 1) return InternalError("expected one case");
  return results[0].decisions;
}

TEST(MatchCases, RowParallelShapeFailsTheBlockCheckAtTp8) {
  // GLM-4.5 shared experts' down_proj: 1536 / 8 = 192 input columns per rank.
  Result<std::vector<CaseDecision>> d = Match(Case("vllm", R"([
    {"prefix": "model.layers.3.mlp.shared_experts.down_proj", "kind": "linear",
     "module_class": "RowParallelLinear", "shape": [5120, 1536]},
    {"prefix": "model.layers.3.mlp.shared_experts.down_proj", "kind": "linear",
     "module_class": "RowParallelLinear", "shape": [5120, 2048]},
    {"prefix": "model.layers.3.mlp.shared_experts.down_proj", "kind": "linear",
     "module_class": "RowParallelLinear"}])"));
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->size(), 3u);
  EXPECT_EQ((*d)[0].decision, "error");
  EXPECT_EQ((*d)[0].detail,
            "ValueError: Weight input_size_per_partition = 192 is not divisible by weight "
            "quantization block_k = 128.");
  EXPECT_EQ((*d)[1].decision, "quantized");  // 256 per rank
  EXPECT_EQ((*d)[2].decision, "quantized");  // no shape: no check
}

TEST(MatchCases, MoeIntermediateFailsSglangBlockCheckAtTp8) {
  Result<std::vector<CaseDecision>> d = Match(Case("sglang", R"([
    {"prefix": "model.layers.3.mlp.experts", "kind": "moe", "module_class": "FusedMoE",
     "experts": 161, "shape": [1536, 5120]},
    {"prefix": "model.layers.3.mlp.experts", "kind": "moe", "module_class": "FusedMoE",
     "experts": 161, "shape": [2048, 5120]}])"));
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].decision, "error");
  EXPECT_EQ((*d)[0].detail,
            "ValueError: The output_size of gate's and up's weight = 192 is not divisible by "
            "weight quantization block_n = 128.");
  EXPECT_EQ((*d)[1].decision, "quantized");
}

TEST(MatchCases, QkvSplitsByTheRecordedHeads) {
  // 64 query heads and 4 KV heads of 128: at tp 8 each rank holds one replicated KV head (128
  // rows, a block); with 8 KV heads the 512 KV rows split into 64 per rank, half a block (SGLang
  // checks every partition; vLLM lets a merged layer with ragged partitions through).
  const std::string qkv = R"({"prefix": "model.layers.0.self_attn.qkv_proj", "kind": "linear",
    "module_class": "QKVParallelLinear", "shape": [9216, 5120], "legs": [8192, 512, 512], )";
  Result<std::vector<CaseDecision>> d =
      Match(Case("sglang", "[" + qkv + R"("heads": [64, 4]}, )" + qkv + R"("heads": [64, 8]}])"));
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].decision, "quantized") << (*d)[0].detail;
  EXPECT_EQ((*d)[1].decision, "error");
  EXPECT_NE((*d)[1].detail.find("= 64 is not divisible by weight quantization block_n = 128"),
            std::string::npos)
      << (*d)[1].detail;
}

TEST(MatchCases, MergedLegsAreCheckedOneByOne) {
  // SGLang Qwen3.6 in_proj_ba-like: two legs of 48 rows, each its own output partition at tp 1.
  std::string text = Case("sglang", R"([
    {"prefix": "model.layers.0.mlp.gate_up_proj", "kind": "linear",
     "module_class": "MergedColumnParallelLinear", "shape": [3072, 5120], "legs": [1536, 1536]}])");
  Result<std::vector<CaseDecision>> d = Match(text);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ((*d)[0].decision, "error");  // 192 rows per leg and rank
  EXPECT_NE((*d)[0].detail.find("= 192 is not divisible"), std::string::npos) << (*d)[0].detail;
}

TEST(MatchCases, PartitionsTheMappingDoesNotNameAreCheckedToo) {
  // Qwen3.6 in_proj_ba: two partitions of 48 rows, a fused layer the mapping here does not name.
  const std::string ba = R"({"prefix": "model.layers.0.linear_attn.in_proj_ba", "kind": "linear",
    "module_class": "MergedColumnParallelLinear", "shape": [96, 5120])";
  Result<std::vector<CaseDecision>> d =
      Match(Case("sglang", "[" + ba + R"(, "legs": [48, 48]}, )" + ba + "}]"));
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_NE((*d)[0].detail.find("= 6 is not divisible"), std::string::npos) << (*d)[0].detail;
  EXPECT_NE((*d)[1].detail.find("= 12 is not divisible"), std::string::npos) << (*d)[1].detail;
}

// SGLang builds Qwen3.5's language model as `model.layers.N` but passes the checkpoint's
// `model.language_model.layers.N` prefix (tests/data/oracle/releases/sglang-0.5.23/models/
// sglang-qwen36-fp8.json); a text-only build passes `model.layers.N`. Either prefix reaches the
// in_proj_ba site, and its 48-row legs fail the block-128 check at tp 1 as the engine's
// create_weights does.
TEST(MatchCases, Qwen35InProjBaFailsTheBlockCheckUnderEitherPrefix) {
  for (const std::string root : {"model.language_model", "model"}) {
    const std::string text = R"([{"id": "c1", "engine": "sglang", "engine_commit": "sglang 0.5.23",
      "format": "fp8",
      "config": {"quant_method": "fp8", "activation_scheme": "dynamic",
                 "weight_block_size": [128, 128]},
      "packed_modules_mapping": {"in_proj_qkvz": ["in_proj_qkv", "in_proj_z"],
                                 "in_proj_ba": ["in_proj_b", "in_proj_a"]},
      "layers": [{"prefix": ")" +
                             root + R"(.layers.0.linear_attn.in_proj_ba", "kind": "linear",
                  "module_class": "MergedColumnParallelLinear", "shape": [96, 5120],
                  "legs": [48, 48]}]}])";
    Result<std::vector<CaseDecision>> d = Match(text);
    ASSERT_TRUE(d.ok()) << d.status().message();
    ASSERT_EQ(d->size(), 1u);
    EXPECT_EQ((*d)[0].decision, "error") << root;
    EXPECT_EQ((*d)[0].detail,
              "ValueError: Weight output_partition_size = 48 is not divisible by weight "
              "quantization block_n = 128.")
        << root;
  }
}

// A case names its dialect, or its engine and the release its engine_commit names; a release
// quantpath does not reproduce is an error naming the case, never the newest release instead.
TEST(MatchCases, AReleaseQuantpathDoesNotReproduceIsAnError) {
  const auto text = [](std::string_view engine, std::string_view commit) {
    return std::string(R"([{"id": "c1", "engine": ")") + std::string(engine) +
           R"(", "engine_commit": ")" + std::string(commit) + R"(", "format": "fp8",
      "config": {"quant_method": "fp8", "activation_scheme": "dynamic"},
      "layers": [{"prefix": "model.layers.0.mlp.down_proj", "kind": "linear"}]}])";
  };
  Result<std::vector<CaseDecision>> future = Match(text("vllm", "vllm 0.99.0 (fp8.py)"));
  ASSERT_FALSE(future.ok());
  EXPECT_NE(future.status().message().find("cases.json#/0"), std::string::npos)
      << future.status().message();
  EXPECT_NE(future.status().message().find("vllm 0.99.0"), std::string::npos);
  EXPECT_TRUE(Match(text("vllm", "vllm 0.34.0 (fp8.py)")).ok());
  EXPECT_TRUE(Match(text("vllm@helpers", "1436674bcb")).ok());
}

TEST(MatchCases, MalformedShapesNameFileCaseAndLayer) {
  const std::string layer = R"({"prefix": "model.layers.0.mlp.gate_up_proj", "kind": "linear",
    "module_class": "MergedColumnParallelLinear", )";
  for (const std::string& fields : {
           std::string(R"("shape": [3072, 5120], "legs": [1536, 1000]})"),
           std::string(R"("shape": [3072, 5120], "heads": [64]})"),
           std::string(R"("shape": [3072, -5120]})"),
           std::string(R"("shape": [3072]})"),
           std::string(R"("legs": [1536, 1536]})"),
           std::string(R"("shape": [3072, 5120], "experts": 8})"),
       }) {
    Result<std::vector<CaseDecision>> d = Match(Case("vllm", "[" + layer + fields + "]"));
    ASSERT_FALSE(d.ok()) << fields;
    EXPECT_EQ(d.status().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(d.status().message().find("cases.json#/0/layers/0 (case c1, layer "
                                        "\"model.layers.0.mlp.gate_up_proj\")"),
              std::string::npos)
        << d.status().message();
  }
}

}  // namespace
}  // namespace quantpath
