// `load --engine E` on MoE folders: the engines build the embedding (SGLang) and the router
// without a quantization config and list no site for them, yet their weights are the model's. They
// load unquantized with the norms, and one stored quantized is an error naming the tensor and the
// module.
#include <gtest/gtest.h>

#include <string>

#include "quantpath/pipeline.h"
#include "tests/pipeline/producer_values.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

const std::string kData = std::string(QUANTPATH_TEST_DATA) + "/";

TEST(LoadEnginesTest, UnlistedModulesLoadUnquantized) {
  struct Case {
    std::string folder;
    std::string engine;
  };
  for (const Case& c : {Case{"producers/ct_qwen3moe_w4a16_g64_sym", "native"},
                        Case{"producers/ct_qwen3moe_w4a16_g64_sym", "vllm@helpers"},
                        Case{"producers/ct_qwen3moe_w4a16_g64_sym", "sglang@helpers"},
                        Case{"producers/ct_qwen3moe_w4a16_g64_sym", "sglang@0.5.23"},
                        Case{"producers/ct_qwen3moe_w4a16_g64_sym", "vllm@0.33"},
                        // SGLang gives every FusedMoE BitsAndBytesMoEMethod (vLLM's experts get
                        // no method, so there the 4-bit experts are refused).
                        Case{"producers/bnb_qwen3moe_nf4", "native"},
                        Case{"producers/bnb_qwen3moe_nf4", "sglang@helpers"},
                        Case{"producers/bnb_qwen3moe_fp4_dq", "sglang@helpers"},
                        Case{"producers/bnb_qwen3moe_int8", "native"}}) {
    SCOPED_TRACE(c.folder + " --engine " + c.engine);
    Result<ModelLoad> load = testing::LoadWithEngine(kData + c.folder, c.engine);
    ASSERT_TRUE(load.ok()) << load.status().message();
    Result<ModelLoad> native = testing::LoadWithEngine(kData + c.folder, "native");
    ASSERT_TRUE(native.ok()) << native.status().message();
    // Every tensor is read once, whichever sites the engine lists.
    EXPECT_EQ(load->bytes_read, native->bytes_read);
    EXPECT_EQ(load->tensors, native->tensors);
  }
  Result<ModelLoad> vllm =
      testing::LoadWithEngine(kData + "producers/bnb_qwen3moe_nf4", "vllm@helpers");
  ASSERT_FALSE(vllm.ok());
  EXPECT_NE(vllm.status().message().find("mlp.experts.0.gate_proj.weight is stored as U8"),
            std::string::npos)
      << vllm.status().message();
  // SGLang's BitsAndBytesMoEMethod raises for 8-bit experts when it creates their weights.
  Result<ModelLoad> sglang_int8 =
      testing::LoadWithEngine(kData + "producers/bnb_qwen3moe_int8", "sglang@helpers");
  ASSERT_FALSE(sglang_int8.ok());
  EXPECT_NE(sglang_int8.status().message().find(
                "model.layers.0.mlp.experts: decided error: NotImplementedError"),
            std::string::npos)
      << sglang_int8.status().message();
}

// vLLM 0.33 builds the experts as RoutedExperts, the class compressed-tensors' "Linear" target is
// copied to: every compressed-tensors MoE fixture loads its experts quantized, as on native.
TEST(LoadEnginesTest, Vllm033QuantizesCompressedTensorsExperts) {
  for (const char* folder :
       {"ct_qwen3moe_w4a16_g64_sym", "ct_qwen3moe_fp8_block", "ct_qwen3moe_fp8_dynamic",
        "ct_qwen3moe_w8a8_int8_dynamic", "ct_qwen3moe_nvfp4", "ct_qwen3moe_nvfp4a16",
        "ct_qwen3moe_mxfp4", "ct_qwen3moe_mxfp8"}) {
    SCOPED_TRACE(folder);
    Result<OpenOptions> options = OpenOptions::Parse("vllm@0.33", "", "cpu");
    ASSERT_TRUE(options.ok()) << options.status().message();
    Result<Model> model = OpenModel(kData + "producers/" + folder, *options);
    ASSERT_TRUE(model.ok()) << model.status().message();
    Result<ModelLoad> load = LoadModel(*model, LoadModelOptions{0, {}});
    ASSERT_TRUE(load.ok()) << load.status().message();
    int experts = 0;
    for (const SiteLoad& site : load->sites) {
      if (site.site->kind != SiteKind::kMoe) continue;
      ++experts;
      EXPECT_EQ(site.site->module_class, "RoutedExperts");
      EXPECT_TRUE(site.loaded) << site.site->path;
      EXPECT_NE(site.spec_id, "bf16") << site.site->path;
    }
    EXPECT_EQ(experts, 2);
    Result<ModelLoad> native = testing::LoadWithEngine(kData + "producers/" + folder, "native");
    ASSERT_TRUE(native.ok()) << native.status().message();
    EXPECT_EQ(load->bytes_read, native->bytes_read);
  }
}

TEST(LoadEnginesTest, AQuantizedUnlistedModuleIsAnError) {
  const std::string router = "model.layers.1.mlp.gate.weight";
  const std::filesystem::path dir = testing::MutatedFixture(
      kData + "producers/ct_qwen3moe_w4a16_g64_sym", [&](testing::TestTensor* t) {
        if (t->name == router) {
          t->dtype = "U8";  // the same bytes, as if stored quantized
          t->shape = {static_cast<int64_t>(t->bytes.size())};
        }
        return true;
      });
  Result<ModelLoad> load = testing::LoadWithEngine(dir.string(), "sglang@helpers");
  ASSERT_FALSE(load.ok());
  const std::string message(load.status().message());
  EXPECT_NE(message.find(router + " is U8"), std::string::npos) << message;
  EXPECT_NE(message.find("builds model.layers.1.mlp.gate without a quantization config"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace quantpath
