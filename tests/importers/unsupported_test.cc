// Recognised-but-unsupported formats: each is detected (never mistaken for another format or for
// an unquantized model) and rejected with a message naming the file, the format, what is
// missing, who reads it (the engine releases that register it, from their recorded
// QUANTIZATION_METHODS, and other libraries) and what to do instead; an engine release that
// registers none of its names answers with its own "Unknown quantization method".
#include <gtest/gtest.h>

#include <tuple>

#include "fmt/format.h"
#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

using family_test::Contains;
using family_test::Corpus;
using family_test::D;
using family_test::Embedded;
using family_test::Import;

void ExpectUnsupported(const ConfigSources& sources, std::string_view importer,
                       std::string_view where, std::string_view words) {
  const Importer* detected = nullptr;
  for (const Importer* i : Importers()) {
    if (i->Detect(sources)) {
      detected = i;
      break;
    }
  }
  ASSERT_NE(detected, nullptr);
  EXPECT_EQ(detected->name(), importer);
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    Result<QuantPlan> plan = Import(sources, dialect);
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().code(), ErrorCode::kUnsupported);
    EXPECT_TRUE(Contains(plan.status().message(), where)) << plan.status().message();
    EXPECT_TRUE(Contains(plan.status().message(), words)) << plan.status().message();
    EXPECT_TRUE(Contains(plan.status().message(), "not supported")) << plan.status().message();
  }
}

TEST(Unsupported, MlxCorpusConfigIsNotGptq) {
  ExpectUnsupported(Corpus("Qwen__Qwen3-14B-MLX-4bit"), "mlx", "config.json#/quantization",
                    "MLX affine quantization");
  // Forcing GPTQ names both formats.
  Result<QuantPlan> forced =
      ImportPlan(Corpus("Qwen__Qwen3-14B-MLX-4bit"), D("native"), std::string("gptq"));
  ASSERT_FALSE(forced.ok());
  EXPECT_TRUE(Contains(forced.status().message(), "mlx"));
}

TEST(Unsupported, MlxUnderQuantizationConfigOnly) {
  ExpectUnsupported(Embedded(R"({"group_size": 32, "bits": 8})"), "mlx",
                    "config.json#/quantization_config", "MLX");
}

TEST(Unsupported, KeyedOnQuantMethod) {
  ExpectUnsupported(Embedded(R"({"quant_method": "quark", "algo_config": null,
      "exclude": ["model.layers.0.self_attn.q_a_proj"], "global_quant_config": {}})"),
                    "quark", "config.json#/quantization_config", "AMD Quark");
  ExpectUnsupported(Embedded(R"({"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0,
      "modules_to_not_convert": ["lm_head"]})"),
                    "fbgemm_fp8", "config.json#/quantization_config", "FBGEMM FP8");
  ExpectUnsupported(Embedded(R"({"quant_method": "hqq", "quant_config": {}})"), "hqq",
                    "config.json#/quantization_config", "Half-Quadratic");
  ExpectUnsupported(Embedded(R"({"quant_method": "torchao", "quant_type": {}})"), "torchao",
                    "config.json#/quantization_config", "torchao");
  ExpectUnsupported(Embedded(R"({"quant_method": "gguf"})"), "gguf",
                    "config.json#/quantization_config", "GGUF");
}

TEST(Unsupported, FpQuantAndHumming) {
  ExpectUnsupported(Embedded(R"({"quant_method": "fp_quant", "forward_dtype": "mxfp4",
      "hadamard_group_size": 32})"),
                    "fp_quant", "config.json#/quantization_config", "FP-Quant");
  ExpectUnsupported(Embedded(R"({"quant_method": "humming"})"), "humming",
                    "config.json#/quantization_config", "humming is no checkpoint format");
}

// The message's "Read by" and what to do instead, per format, under native.
TEST(Unsupported, SaysWhoReadsItAndWhatToDoInstead) {
  const auto native = [](std::string_view config) {
    Result<QuantPlan> plan = Import(Embedded(config), "native");
    EXPECT_FALSE(plan.ok());
    return plan.ok() ? std::string() : plan.status().message();
  };
  const std::string quark = native(R"({"quant_method": "quark", "global_quant_config": {}})");
  EXPECT_TRUE(Contains(quark,
                       "Read by: vllm@0.33 and vllm@0.34 (quark); sglang@0.5.23 (quark); "
                       "transformers (QuarkConfig, with amd-quark)."))
      << quark;
  const std::string torchao = native(R"({"quant_method": "torchao", "quant_type": {}})");
  EXPECT_TRUE(Contains(torchao, "Read by: vllm@0.33 and vllm@0.34 (torchao); transformers"))
      << torchao;
  EXPECT_TRUE(Contains(torchao, "quantize the bf16 model with `quantpath quantize`")) << torchao;
  const std::string gguf = native(R"({"quant_method": "gguf"})");
  EXPECT_TRUE(Contains(gguf, "Read by: sglang@0.5.23 (gguf); llama.cpp")) << gguf;
  const std::string hqq = native(R"({"quant_method": "hqq", "quant_config": {}})");
  EXPECT_TRUE(Contains(hqq, "Read by: transformers (HqqConfig, with hqq).")) << hqq;
  EXPECT_TRUE(Contains(hqq, "`model.dequantize()`")) << hqq;
  const std::string fp_quant = native(R"({"quant_method": "fp_quant"})");
  EXPECT_TRUE(Contains(fp_quant, "Read by: vllm@0.33 (fp_quant); transformers")) << fp_quant;
  EXPECT_TRUE(Contains(fp_quant, "`--online w4a4-mxfp4-had32-online`")) << fp_quant;
  const std::string mlx = native(R"({"group_size": 64, "bits": 4})");
  EXPECT_TRUE(Contains(mlx, "Read by: sglang@0.5.23 on mps (mlx_q4, mlx_q8); mlx-lm.")) << mlx;
  EXPECT_TRUE(Contains(mlx, "`mlx_lm.convert --dequantize`")) << mlx;
}

// A release that registers the name: still unsupported here, with the same words. A release that
// does not: its own error, listing what it registers.
TEST(Unsupported, EachReleaseAnswersAsItRegistersTheName) {
  Result<QuantPlan> quark =
      Import(Embedded(R"({"quant_method": "quark", "global_quant_config": {}})"), "vllm@0.34");
  ASSERT_FALSE(quark.ok());
  EXPECT_EQ(quark.status().code(), ErrorCode::kUnsupported);
  for (const char* release : {"vllm@0.33", "vllm@0.34", "sglang@0.5.23"}) {
    Result<QuantPlan> hqq = Import(Embedded(R"({"quant_method": "hqq"})"), release);
    ASSERT_FALSE(hqq.ok());
    EXPECT_EQ(hqq.status().code(), ErrorCode::kInvalidInput) << release;
    EXPECT_TRUE(Contains(hqq.status().message(),
                         "config.json#/quantization_config: ValueError: Unknown quantization "
                         "method: hqq. Must be one of ['"))
        << hqq.status().message();
    EXPECT_TRUE(Contains(hqq.status().message(),
                         fmt::format("({} on cuda does not register it; read by: transformers "
                                     "(HqqConfig, with hqq))",
                                     release)))
        << hqq.status().message();
  }
  // vLLM 0.34 dropped fp_quant (0.33 registered it); SGLang reads GGUF, vLLM does not.
  const auto refusal = [](std::string_view config, std::string_view release) {
    Result<QuantPlan> plan = Import(Embedded(config), release);
    EXPECT_FALSE(plan.ok()) << release;
    return plan.ok() ? Status() : plan.status();
  };
  for (const auto& [config, registers, refuses] :
       {std::tuple{R"({"quant_method": "fp_quant"})", "vllm@0.33", "vllm@0.34"},
        std::tuple{R"({"quant_method": "gguf"})", "sglang@0.5.23", "vllm@0.34"}}) {
    EXPECT_EQ(refusal(config, registers).code(), ErrorCode::kUnsupported) << config;
    const Status unknown = refusal(config, refuses);
    EXPECT_EQ(unknown.code(), ErrorCode::kInvalidInput) << config;
    EXPECT_TRUE(Contains(unknown.message(), "ValueError: Unknown quantization method: "))
        << unknown.message();
  }
}

}  // namespace
}  // namespace quantpath
