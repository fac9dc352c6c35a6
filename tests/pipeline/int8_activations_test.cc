// --int8-activations (OpenOptions::int8_activations) on the producers' 4-bit weight-only
// checkpoints (tests/data/producers: llmcompressor's compressed-tensors int4 group / channel,
// symmetric / asymmetric, NVFP4A16 and MXFP4A16, auto-round's AWQ and GPTQ, GPTQModel's act-order
// GPTQ):
//   1. every 4-bit layer is decided with int8 dynamic per-token activations, its spec loads, and a
//      seeded run is within the family's tolerance of the fp64 reference, which quantizes X the
//      same way; the fast kernel of the best CPU level this machine has runs it;
//   2. its output differs from the exact weight-only run of the same layer by about what rounding
//      X to 255 levels per row makes (below 1 % of the largest output, and not zero);
//   3. act-order layers stay weight-only, with a note; MoE experts take the same activations;
//   4. another engine's dialect or a GPU device is an error naming the option.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "quantpath/cpu_features.h"
#include "quantpath/pipeline.h"

namespace quantpath {
namespace {

const std::string kData = std::string(QUANTPATH_TEST_DATA) + "/producers/";

Result<Model> Open(const std::string& folder, bool int8, std::string_view engine = "native") {
  QP_ASSIGN_OR_RETURN(OpenOptions options, OpenOptions::Parse(engine, "", "cpu"));
  options.int8_activations = int8;
  return OpenModel(kData + folder, options);
}

struct Fixture {
  std::string folder;
  std::string avx2_kernel;        // the kernel that runs it from AVX2 on
  std::string avx512vnni_kernel;  // from AVX-512 VNNI on
};

// The kernel the dispatcher picks on this CPU, or "" below AVX2 (the reference).
std::string ExpectedKernel(const Fixture& f) {
  const CpuLevel best = BestCpuLevel(DetectCpuFeatures());
  if (best >= CpuLevel::kAvx512Vnni) return f.avx512vnni_kernel;
  return best >= CpuLevel::kAvx2 ? f.avx2_kernel : "";
}

void PrintTo(const Fixture& f, std::ostream* os) { *os << f.folder; }

class Int8ActivationsTest : public ::testing::TestWithParam<Fixture> {};

TEST_P(Int8ActivationsTest, LayersRunOnInt8ActivationsNearTheExactProduct) {
  Result<Model> model = Open(GetParam().folder, true);
  Result<Model> exact_model = Open(GetParam().folder, false);
  ASSERT_TRUE(model.ok()) << model.status().message();
  ASSERT_TRUE(exact_model.ok()) << exact_model.status().message();
  Result<std::vector<LayerDecision>> layers = DecideAll(*model);
  ASSERT_TRUE(layers.ok()) << layers.status().message();
  int checked = 0;
  for (const LayerDecision& decision : *layers) {
    if (decision.site->kind != SiteKind::kLinear || !decision.spec) continue;
    const std::string& path = decision.site->path;
    SCOPED_TRACE(path);
    EXPECT_TRUE(decision.kernel_available);
    Result<LoadedLayer> loaded = LoadLayer(*model, path);
    Result<LoadedLayer> exact = LoadLayer(*exact_model, path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    ASSERT_TRUE(exact.ok()) << exact.status().message();
    EXPECT_EQ(loaded->activation.mode, ActMode::kDynamicPerToken);
    EXPECT_EQ(loaded->activation.dtype, QDType::kINT8);
    EXPECT_TRUE(loaded->activation.symmetric);
    EXPECT_EQ(exact->activation.mode, ActMode::kNone);

    Result<LayerRun> run = RunSeeded(*loaded, 5, 7);
    Result<LayerRun> exact_run = RunSeeded(*exact, 5, 7);
    ASSERT_TRUE(run.ok()) << run.status().message();
    ASSERT_TRUE(exact_run.ok()) << exact_run.status().message();
    EXPECT_TRUE(run->pass()) << "rel " << run->rel << " tol " << run->tol;
    EXPECT_LT(run->rel, 1e-5) << "the kernel and the reference round X alike";
    if (const std::string kernel = ExpectedKernel(GetParam()); !kernel.empty()) {
      EXPECT_EQ(run->kernel, kernel);
    }
    double largest = 0, diff = 0;
    for (size_t i = 0; i < run->y.size(); ++i) {
      largest = std::max(largest, double{std::fabs(exact_run->y[i])});
      diff = std::max(diff, double{std::fabs(run->y[i] - exact_run->y[i])});
    }
    EXPECT_GT(diff, 0.0) << "X was not quantized";
    EXPECT_LT(diff, 1e-2 * largest);  // measured 0.3–0.6 %
    ++checked;
  }
  EXPECT_EQ(checked, 8);  // qkv, o, gate_up, down of 2 layers
}

INSTANTIATE_TEST_SUITE_P(
    Producers, Int8ActivationsTest,
    ::testing::Values(
        Fixture{"ct_llama_w4a16_g64_sym", "GemmW4A4A8Nibbles_Avx2", "GemmW4A4A8Quads_Avx512Vnni"},
        Fixture{"ct_llama_w4a16_g64_asym", "GemmW4A4A8Nibbles_Avx2", "GemmW4A4A8Quads_Avx512Vnni"},
        Fixture{"ct_llama_w4a16_channel", "GemmW4A4A8Nibbles_Avx2", "GemmW4A4A8Quads_Avx512Vnni"},
        Fixture{"ar_llama_auto_awq_w4g64_asym", "GemmW4A4A8Nibbles_Avx2",
                "GemmW4A4A8Quads_Avx512Vnni"},
        Fixture{"ar_llama_auto_gptq_w4g64_sym", "GemmW4A4A8Nibbles_Avx2",
                "GemmW4A4A8Quads_Avx512Vnni"},
        Fixture{"ct_llama_nvfp4a16", "GemmNvfp4A8_Avx2", "GemmNvfp4A8_Avx2"},
        Fixture{"ct_llama_mxfp4a16", "GemmMxfp4A8_Avx2", "GemmMxfp4A8_Avx2"}),
    [](const ::testing::TestParamInfo<Fixture>& info) { return info.param.folder; });

TEST(Int8Activations, ActOrderLayersStayWeightOnly) {
  Result<Model> model = Open("gm_llama_gptq_w4g64_sym_desc_act", true);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_NE(std::find(model->plan.notes.begin(), model->plan.notes.end(),
                      "--int8-activations: int4 layers with act-order or groups other than a "
                      "power-of-two multiple of 64 stay weight-only"),
            model->plan.notes.end());
  Result<LoadedLayer> loaded = LoadLayer(*model, "model.layers.0.mlp.down_proj");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->activation.mode, ActMode::kNone);
}

TEST(Int8Activations, MoeExpertsTakeThem) {
  Result<Model> model = Open("ct_qwen3moe_w4a16_g64_sym", true);
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<LoadedExperts> experts = LoadExperts(*model, "model.layers.0.mlp.experts");
  ASSERT_TRUE(experts.ok()) << experts.status().message();
  Result<ExpertsRun> run = RunExpertsSeeded(*experts, 3, 5, std::nullopt);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_TRUE(run->pass());
  EXPECT_EQ(experts->activation.mode, ActMode::kDynamicPerToken);
}

TEST(Int8Activations, GpuDevicesAreAnError) {
  Result<OpenOptions> options = OpenOptions::Parse("native", "", "sm100");
  ASSERT_TRUE(options.ok()) << options.status().message();
  options->int8_activations = true;
  Result<Model> model = OpenModel(kData + "ct_llama_nvfp4a16", *options);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("--device cpu"), std::string::npos);
}

TEST(Int8Activations, OtherEnginesAreAnError) {
  Result<Model> model = Open("ct_llama_w4a16_g64_sym", true, "vllm@helpers");
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("--int8-activations"), std::string::npos);
  EXPECT_NE(model.status().message().find("--engine native"), std::string::npos);
}

}  // namespace
}  // namespace quantpath
