// How the current releases find the method (a standalone integer-family file is read only with
// --quantization; without it the model-level finding names the packed tensor) and which model
// dtypes a method refuses (vLLM 0.33 / SGLang 0.5.23 _get_quantization_config).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quantpath/importers.h"
#include "quantpath/planner.h"
#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

using family_test::Corpus;
using family_test::D;
using family_test::Files;
using family_test::Qkv;
using family_test::Site;

constexpr std::string_view kWizardMega = "TheBloke__wizard-mega-13B-GPTQ";

TEST(MethodDetection, ReleasesDoNotReadQuantizeConfigWithoutQuantization) {
  // config.json embeds nothing; quantize_config.json holds the GPTQ description.
  const ConfigSources sources = Corpus(kWizardMega);
  ASSERT_EQ(sources.Embedded(), std::nullopt);
  for (std::string_view engine : {"vllm@0.33", "sglang@0.5.23"}) {
    SCOPED_TRACE(engine);
    Result<QuantPlan> plan = ImportPlan(sources, D(engine));
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_EQ(plan->quant_method, "none");
    ASSERT_EQ(plan->errors.size(), 1u);
    const ModelFinding& finding = plan->errors[0];
    // The folder lists no tensors: the tensor is named later, from the sites.
    EXPECT_FALSE(finding.tensor_listed);
    EXPECT_EQ(finding.implied_suffix, "qweight");
    EXPECT_NE(
        finding.message.find(std::string(engine) + " will not detect the quantization method"),
        std::string::npos)
        << finding.message;
    EXPECT_NE(finding.message.find("quantize_config.json is read only with --quantization"),
              std::string::npos);
    EXPECT_NE(finding.message.find("unless --quantization gptq is given"), std::string::npos);
    // Every layer unquantized: the engine builds the model without a quantization config.
    EXPECT_EQ(DecideSite(*plan, Qkv("model.layers.0")).kind, DecisionKind::kUnquantized);
  }
}

TEST(MethodDetection, QuantizationMakesTheReleasesReadTheFile) {
  Result<QuantPlan> plan = ImportPlan(Corpus(kWizardMega), D("vllm@0.33"), std::string("gptq"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->quant_method, "gptq");
  EXPECT_TRUE(plan->errors.empty());
}

TEST(MethodDetection, NativeAndRecordedDialectsKeepReadingTheFile) {
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    SCOPED_TRACE(dialect);
    Result<QuantPlan> plan = ImportPlan(Corpus(kWizardMega), D(dialect));
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_EQ(plan->quant_method, "gptq");
    EXPECT_TRUE(plan->errors.empty());
  }
}

TEST(MethodDetection, AnEmbeddedDescriptionIsStillDetected) {
  // Llama-2-13B-chat-GPTQ embeds quantization_config beside its quantize_config.json.
  Result<QuantPlan> plan = ImportPlan(Corpus("TheBloke__Llama-2-13B-chat-GPTQ"), D("vllm@0.33"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->quant_method, "gptq");
  EXPECT_TRUE(plan->errors.empty());
}

TEST(MethodDetection, GptOssMxfp4IsVllmsNameForMxfp4) {
  const ConfigSources sources =
      Files({{"config.json", R"({"architectures": ["GptOssForCausalLM"], "quantization_config": {
          "quant_method": "gpt_oss_mxfp4", "modules_to_not_convert": ["lm_head"]}})"}});
  Result<QuantPlan> plan = ImportPlan(sources, D("vllm@0.33"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->importer, "mxfp4");
  EXPECT_TRUE(ImportPlan(sources, D("vllm@0.33"), std::string("gpt_oss_mxfp4")).ok());
}

TEST(MethodDetection, QuantizationAwqReadsAnAutoRoundAwqExport) {
  // quant_method "awq" written by AutoRound (autoround_version): vLLM 0.33 accepts
  // --quantization awq over it and runs AutoAWQ.
  const ConfigSources sources = Corpus("hualayn__ai-articles__Qwen3.6-27B-AutoRound-AWQ");
  Result<QuantPlan> detected = ImportPlan(sources, D("vllm@0.33"));
  ASSERT_TRUE(detected.ok()) << detected.status().message();
  EXPECT_EQ(detected->importer, "auto-round");
  Result<QuantPlan> forced = ImportPlan(sources, D("vllm@0.33"), std::string("awq"));
  ASSERT_TRUE(forced.ok()) << forced.status().message();
  EXPECT_EQ(forced->importer, "awq");
  EXPECT_EQ(forced->quant_method, "awq");
  // A format the files do not say stays an error.
  EXPECT_FALSE(ImportPlan(sources, D("vllm@0.33"), std::string("fp8")).ok());
}

// A copy of wizard-mega's files with a checkpoint index naming its tensors.
class IndexedFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("quantpath-detect-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    const std::filesystem::path corpus =
        std::filesystem::path(QUANTPATH_TEST_DATA) / "corpus" / std::string(kWizardMega);
    for (std::string_view name : {"config.json", "quantize_config.json"}) {
      std::filesystem::copy_file(corpus / name, dir_ / name,
                                 std::filesystem::copy_options::overwrite_existing);
    }
    std::ofstream(dir_ / "model.safetensors.index.json") << R"({"metadata": {}, "weight_map": {
              "lm_head.weight": "model-00002-of-00002.safetensors",
              "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
              "model.layers.0.self_attn.q_proj.qweight": "model-00001-of-00002.safetensors",
              "model.layers.0.mlp.down_proj.qweight": "model-00001-of-00002.safetensors",
              "model.layers.0.mlp.down_proj.qzeros": "model-00001-of-00002.safetensors"}})";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(IndexedFolder, TheFindingNamesTheFirstPackedTensorOfTheIndex) {
  Result<ConfigSources> sources = ConfigSources::Load(dir_);
  ASSERT_TRUE(sources.ok()) << sources.status().message();
  Result<QuantPlan> plan = ImportPlan(*sources, D("sglang@0.5.23"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->errors.size(), 1u);
  // By name, the engines' load order within a shard: mlp.down_proj sorts before self_attn.
  EXPECT_EQ(plan->errors[0].tensor, "model.layers.0.mlp.down_proj.qweight");
  EXPECT_TRUE(plan->errors[0].tensor_listed);
  EXPECT_NE(plan->errors[0].message.find(
                "fails on model.layers.0.mlp.down_proj.qweight (the first packed tensor in "
                "model.safetensors.index.json)"),
            std::string::npos)
      << plan->errors[0].message;
}

ConfigSources AwqConfig(std::string_view dtype, bool zero_point) {
  return Files(
      {{"config.json", std::string(R"({"architectures": ["LlamaForCausalLM"], "torch_dtype": ")") +
                           std::string(dtype) +
                           R"(", "quantization_config": {"quant_method": "awq", "bits": 4,
                     "group_size": 128, "version": "gemm", "zero_point": )" +
                           (zero_point ? "true" : "false") + "}}"}});
}

constexpr std::string_view kAwqFp16Only =
    "ValueError: torch.bfloat16 is not supported for quantization method awq. Supported dtypes: "
    "[torch.float16]";

TEST(DtypeCheck, SglangPlainAwqRefusesBfloat16OnEveryLayer) {
  // zero_point false is not Marlin-compatible, so SGLang keeps AWQConfig (float16 only).
  Result<QuantPlan> plan = ImportPlan(AwqConfig("bfloat16", false), D("sglang@0.5.23"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->engine_method, "awq");
  for (SiteKind kind : {SiteKind::kLinear, SiteKind::kLmHead, SiteKind::kEmbedding}) {
    Decision d = DecideSite(*plan, Site("model.layers.0.self_attn.o_proj", kind));
    EXPECT_EQ(d.kind, DecisionKind::kError) << SiteKindName(kind);
    EXPECT_EQ(d.detail, kAwqFp16Only);
  }
}

TEST(DtypeCheck, SglangAwqMarlinAndFloat16Pass) {
  Result<QuantPlan> marlin = ImportPlan(AwqConfig("bfloat16", true), D("sglang@0.5.23"));
  ASSERT_TRUE(marlin.ok()) << marlin.status().message();
  EXPECT_EQ(marlin->engine_method, "awq_marlin");
  const LayerSite o_proj = Site("model.layers.0.self_attn.o_proj");
  EXPECT_EQ(DecideSite(*marlin, o_proj).kind, DecisionKind::kQuantized);
  Result<QuantPlan> fp16 = ImportPlan(AwqConfig("float16", false), D("sglang@0.5.23"));
  ASSERT_TRUE(fp16.ok()) << fp16.status().message();
  EXPECT_EQ(DecideSite(*fp16, o_proj).kind, DecisionKind::kQuantized);
}

TEST(DtypeCheck, QuantizationAwqKeepsThePlainMethodAndDtypeOverrides) {
  // --quantization awq on a Marlin-compatible checkpoint keeps AWQConfig.
  ConfigSources sources = AwqConfig("bfloat16", true);
  Result<QuantPlan> forced = ImportPlan(sources, D("sglang@0.5.23"), std::string("awq"));
  ASSERT_TRUE(forced.ok()) << forced.status().message();
  const LayerSite o_proj = Site("model.layers.0.self_attn.o_proj");
  EXPECT_EQ(DecideSite(*forced, o_proj).detail, kAwqFp16Only);
  // --dtype float16 builds the model in float16, which AWQConfig accepts.
  sources.set_launch(*ParseLaunch("float16", 1, false));
  Result<QuantPlan> half = ImportPlan(sources, D("sglang@0.5.23"), std::string("awq"));
  ASSERT_TRUE(half.ok()) << half.status().message();
  EXPECT_EQ(DecideSite(*half, o_proj).kind, DecisionKind::kQuantized);
}

TEST(DtypeCheck, AutoResolvesAsEachEngineDoes) {
  // No torch_dtype reads as float32: SGLang's auto takes float16 (AWQConfig accepts it), vLLM's
  // bfloat16.
  const ConfigSources sources =
      Files({{"config.json", R"({"architectures": ["LlamaForCausalLM"], "quantization_config": {
                "quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": false}})"}});
  const LayerSite o_proj = Site("model.layers.0.self_attn.o_proj");
  Result<QuantPlan> sglang = ImportPlan(sources, D("sglang@0.5.23"));
  ASSERT_TRUE(sglang.ok()) << sglang.status().message();
  EXPECT_EQ(DecideSite(*sglang, o_proj).kind, DecisionKind::kQuantized);
  // The recorded dialect checks no dtype.
  Result<QuantPlan> recorded = ImportPlan(AwqConfig("bfloat16", false), D("sglang@helpers"));
  ASSERT_TRUE(recorded.ok()) << recorded.status().message();
  EXPECT_NE(DecideSite(*recorded, o_proj).kind, DecisionKind::kError);
}

TEST(DtypeCheck, VllmGptOssMxfp4AcceptsOnlyBfloat16) {
  ConfigSources sources = Corpus("openai__gpt-oss-20b");
  sources.set_launch(*ParseLaunch("float16", 1, false));
  Result<QuantPlan> plan = ImportPlan(sources, D("vllm@0.33"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const LayerSite experts = Site("model.layers.0.mlp.experts", SiteKind::kMoe);
  Decision d = DecideSite(*plan, experts);
  EXPECT_EQ(d.kind, DecisionKind::kError);
  EXPECT_EQ(d.detail,
            "ValueError: torch.float16 is not supported for quantization method gpt_oss_mxfp4. "
            "Supported dtypes: [torch.bfloat16]");
  // SGLang's Mxfp4Config takes float16 too.
  Result<QuantPlan> sglang = ImportPlan(sources, D("sglang@0.5.23"));
  ASSERT_TRUE(sglang.ok()) << sglang.status().message();
  EXPECT_NE(DecideSite(*sglang, experts).kind, DecisionKind::kError);
}

TEST(DtypeCheck, Float32IsRefusedByFp8) {
  ConfigSources sources = Corpus("deepseek-ai__DeepSeek-R1");
  sources.set_launch(*ParseLaunch("float32", 1, false));
  for (std::string_view engine : {"vllm@0.33", "sglang@0.5.23"}) {
    Result<QuantPlan> plan = ImportPlan(sources, D(engine));
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    const LayerSite o_proj = Site("model.layers.0.self_attn.o_proj");
    EXPECT_EQ(DecideSite(*plan, o_proj).detail,
              "ValueError: torch.float32 is not supported for quantization method fp8. Supported "
              "dtypes: [torch.bfloat16, torch.float16]")
        << engine;
  }
}

// mlx-lm writes its description under config.json's `quantization`: vLLM 0.33 reads only
// quantization_config, builds Qwen3-14B-MLX-4bit unquantized (recorded: no get_quant_method call)
// and then meets the scales tensors; the other dialects still refuse the format.
TEST(Mlx, Vllm033BuildsItUnquantizedAndFailsOnTheScales) {
  Result<ConfigSources> sources = ConfigSources::Load(std::filesystem::path(QUANTPATH_TEST_DATA) /
                                                      "corpus" / "Qwen__Qwen3-14B-MLX-4bit");
  ASSERT_TRUE(sources.ok()) << sources.status().message();
  Result<QuantPlan> plan = ImportPlan(*sources, D("vllm@0.33"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->quant_method, "none");
  ASSERT_EQ(plan->errors.size(), 1u);
  EXPECT_EQ(plan->errors[0].tensor, "lm_head.scales");
  EXPECT_TRUE(plan->errors[0].tensor_listed);
  EXPECT_NE(plan->errors[0].message.find("not the MLX description at config.json#/quantization"),
            std::string::npos)
      << plan->errors[0].message;
  for (std::string_view other : {"native", "vllm@helpers", "sglang@0.5.23"}) {
    Result<QuantPlan> refused = ImportPlan(*sources, D(other));
    ASSERT_FALSE(refused.ok()) << other;
    EXPECT_NE(refused.status().message().find("MLX affine quantization"), std::string::npos);
  }
}

}  // namespace
}  // namespace quantpath
