// The engines' whole-model checks end to end: a method the releases do not detect (plan exits 1
// with one model-level finding, diff says "errors at" the packed tensor), model dtypes a method
// refuses (--dtype), and create_weights shape checks at a tensor-parallel size (--tp).
#include <gtest/gtest.h>

#include <string>

#include "quantpath/base.h"
#include "tests/cli/cli_test_util.h"

namespace quantpath {
namespace {

using testing::ParseOrDie;
using testing::RunCli;

constexpr std::string_view kWizardMega = "tests/data/corpus/TheBloke__wizard-mega-13B-GPTQ";

bool Has(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

const Json* FindLayer(const Json& plan, std::string_view path) {
  for (const Json& layer : plan.Find("layers")->items()) {
    if (layer.Find("path")->string_value() == path) return &layer;
  }
  return nullptr;
}

TEST(DetectCli, PlanReportsTheUndetectedMethodOnceAndExitsOne) {
  auto r = RunCli("plan " + std::string(kWizardMega) + " --engine vllm@0.33 --json");
  ASSERT_EQ(r.exit_code, 1) << r.out;
  Json plan = ParseOrDie(r.out);
  const Json* errors = plan.Find("model_errors");
  ASSERT_NE(errors, nullptr);
  ASSERT_EQ(errors->items().size(), 1u);
  const Json& finding = errors->items()[0];
  // The folder has no index or shards: the name Llama's GPTQ layout implies for the first layer.
  EXPECT_EQ(finding.Find("tensor")->string_value(), "model.layers.0.self_attn.q_proj.qweight");
  EXPECT_FALSE(finding.Find("tensor_listed")->bool_value());
  EXPECT_TRUE(Has(finding.Find("message")->string_value(),
                  "fails on model.layers.0.self_attn.q_proj.qweight (the name the gptq layout "
                  "implies; the folder lists no qweight tensor) unless --quantization gptq is "
                  "given"))
      << finding.Find("message")->string_value();
  // The layers are decided as the engine builds them: unquantized, no per-layer error.
  EXPECT_EQ(plan.Find("summary")->Find("errors")->int_value(), 0);
  EXPECT_EQ(plan.Find("summary")->Find("quantized")->int_value(), 0);
  const Json* qkv = FindLayer(plan, "model.layers.0.self_attn.qkv_proj");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->Find("decision")->string_value(), "unquantized");
}

TEST(DetectCli, TheTablePrintsTheFindingAndNativeReadsTheFile) {
  auto sglang = RunCli("plan " + std::string(kWizardMega) + " --engine sglang@0.5.23");
  EXPECT_EQ(sglang.exit_code, 1);
  EXPECT_TRUE(Has(sglang.out, "error: sglang@0.5.23 will not detect the quantization method"))
      << sglang.out;
  auto native = RunCli("plan " + std::string(kWizardMega) + " --json");
  EXPECT_EQ(native.exit_code, 0) << native.out;
  Json plan = ParseOrDie(native.out);
  EXPECT_TRUE(plan.Find("model_errors")->items().empty());
  EXPECT_EQ(plan.Find("quant_method")->string_value(), "gptq");
}

TEST(DetectCli, QuantizationRemovesTheFinding) {
  auto r =
      RunCli("plan " + std::string(kWizardMega) + " --engine vllm@0.33 --quantization gptq --json");
  Json plan = ParseOrDie(r.out);
  ASSERT_NE(plan.Find("model_errors"), nullptr) << r.out;
  EXPECT_TRUE(plan.Find("model_errors")->items().empty());
  EXPECT_EQ(plan.Find("quant_method")->string_value(), "gptq");
}

TEST(DetectCli, DiffSaysErrorsAtThePackedTensor) {
  auto r = RunCli("diff " + std::string(kWizardMega) + " --engines vllm@0.33,sglang@0.5.23");
  EXPECT_TRUE(
      Has(r.out, "errors at model.layers.0.self_attn.q_proj.qweight: vllm@0.33 will not detect"))
      << r.out;
  EXPECT_TRUE(Has(r.out, "errors at model.layers.0.self_attn.q_proj.qweight: sglang@0.5.23"))
      << r.out;
}

TEST(DetectCli, DtypeRefusedByTheMethodErrorsEveryLayer) {
  auto r = RunCli(
      "plan tests/data/corpus/openai__gpt-oss-20b --engine vllm@0.33 --dtype float16 "
      "--json");
  ASSERT_EQ(r.exit_code, 1) << r.out;
  Json plan = ParseOrDie(r.out);
  const Json* experts = FindLayer(plan, "model.layers.0.mlp.experts");
  ASSERT_NE(experts, nullptr);
  EXPECT_EQ(experts->Find("error")->string_value(),
            "ValueError: torch.float16 is not supported for quantization method gpt_oss_mxfp4. "
            "Supported dtypes: [torch.bfloat16]");
  EXPECT_EQ(plan.Find("summary")->Find("quantized")->int_value(), 0);
  EXPECT_EQ(RunCli("plan tests/data/corpus/openai__gpt-oss-20b --engine vllm@0.33 --dtype "
                   "bfloat16 --json")
                .exit_code,
            0);
}

TEST(DetectCli, TpSplitsLayersBelowTheFp8Block) {
  // llama-tiny: 4 heads and 2 KV heads of 64, 128×128 blocks: at --tp 2 each rank holds 64 rows
  // of k_proj.
  EXPECT_EQ(RunCli("plan examples/llama-tiny-fp8 --engine sglang@0.5.23").exit_code, 0);
  auto r = RunCli("plan examples/llama-tiny-fp8 --engine sglang@0.5.23 --tp 2 --json");
  ASSERT_EQ(r.exit_code, 1) << r.out;
  Json plan = ParseOrDie(r.out);
  const Json* qkv = FindLayer(plan, "model.layers.0.self_attn.qkv_proj");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->Find("decision")->string_value(), "error");
  EXPECT_EQ(qkv->Find("error")->string_value(),
            "ValueError: Weight output_partition_size = 64 is not divisible by weight "
            "quantization block_n = 128.");
  // o_proj's 256 input columns split into 128 per rank: a whole block.
  EXPECT_EQ(FindLayer(plan, "model.layers.0.self_attn.o_proj")->Find("decision")->string_value(),
            "quantized");
  // native and the recorded dialects check no shapes.
  EXPECT_EQ(RunCli("plan examples/llama-tiny-fp8 --tp 2").exit_code, 0);
  // vLLM lets the ragged fused qkv_proj through; o_proj's 64 input columns per rank fail.
  auto diff = RunCli("diff examples/llama-tiny-fp8 --engines vllm@0.33 --tp 4");
  EXPECT_TRUE(Has(diff.out,
                  "errors at model.layers.0.self_attn.o_proj: ValueError: Weight "
                  "input_size_per_partition = 64 is not divisible by weight "
                  "quantization block_k = 128."))
      << diff.out;
}

TEST(DetectCli, SglangDeepSeekR1Fp8SplitsBelowTheBlockAtTp32) {
  // SGLang builds fused_qkv_a_proj_with_mqa (1536 + 576 rows) as one ReplicatedLinear, so tp 1
  // raises nothing, as recorded from the engine.
  auto tp1 =
      RunCli("plan tests/data/corpus/deepseek-ai__DeepSeek-R1 --engine sglang@0.5.23 --json");
  Json plan1 = ParseOrDie(tp1.out);
  ASSERT_NE(plan1.Find("summary"), nullptr) << tp1.out;
  EXPECT_EQ(plan1.Find("summary")->Find("errors")->int_value(), 0);
  // At tp 32: the dense MLP's 18432 rows give 576 per rank, the experts' 2048 give 64.
  auto tp32 = RunCli(
      "plan tests/data/corpus/deepseek-ai__DeepSeek-R1 --engine sglang@0.5.23 --tp 32 --json");
  EXPECT_EQ(tp32.exit_code, 1);
  Json plan32 = ParseOrDie(tp32.out);
  const Json* gate_up = FindLayer(plan32, "model.layers.0.mlp.gate_up_proj");
  ASSERT_NE(gate_up, nullptr);
  EXPECT_EQ(gate_up->Find("error")->string_value(),
            "ValueError: Weight output_partition_size = 576 is not divisible by weight "
            "quantization block_n = 128.");
  const Json* experts = FindLayer(plan32, "model.layers.3.mlp.experts");
  ASSERT_NE(experts, nullptr);
  EXPECT_EQ(experts->Find("error")->string_value(),
            "ValueError: The output_size of gate's and up's weight = 64 is not divisible by "
            "weight quantization block_n = 128.");
  EXPECT_EQ(
      FindLayer(plan32, "model.layers.0.self_attn.q_b_proj")->Find("decision")->string_value(),
      "quantized");
}

}  // namespace
}  // namespace quantpath
