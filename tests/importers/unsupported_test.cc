// Recognised-but-unsupported formats: each is detected (never mistaken for another format or for
// an unquantized model) and rejected with a message naming the file, the format and what is
// missing.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace quantpath
