// What `load` does with the checkpoint tensors of no site: the architecture's other tensors
// (ModelSites::other_tensors) are required with their shapes, the tensors the engines skip are
// accepted without being read (a rotary inv_freq, an MTP layer an engine builds only for
// speculative decoding), and anything else is an error.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "fmt/format.h"
#include "quantpath/pipeline.h"
#include "tests/pipeline/producer_values.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

const std::string kData = std::string(QUANTPATH_TEST_DATA) + "/";

// Older Llama checkpoints save each layer's rotary table; the engines skip it, so does load.
TEST(LoadOthers, ARotaryTableIsSkippedNotRead) {
  const std::string fixture = kData + "producers/bf16_llama";
  const std::filesystem::path dir =
      testing::MutatedFixture(fixture, [](testing::TestTensor*) { return true; },
                              {testing::F32Tensor("model.layers.1.self_attn.rotary_emb.inv_freq",
                                                  {32}, std::vector<float>(32, 1.0f))});
  Result<ModelLoad> load = testing::LoadWithEngine(dir.string(), "native");
  ASSERT_TRUE(load.ok()) << load.status().message();
  Result<ModelLoad> plain = testing::LoadWithEngine(fixture, "native");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(load->skipped_tensors, 1);
  EXPECT_EQ(load->tensors, plain->tensors + 1);
  EXPECT_EQ(load->bytes_read, plain->bytes_read);
  EXPECT_EQ(load->other_tensors, plain->other_tensors);
}

// A bf16 DeepSeek-V3 (examples/deepseek-tiny's sizes: 3 layers, 8 routed experts, MTP layer 3)
// written from its native sites: every site's weights, then its other tensors.
std::filesystem::path WriteTinyDeepseek() {
  // Apart from MutatedFixture's folder, which FreshDir() names after the test too.
  const std::filesystem::path dir = testing::FreshDir("-written");
  const std::string config = R"({"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 256,
      "num_hidden_layers": 3, "num_attention_heads": 4, "vocab_size": 512,
      "intermediate_size": 512, "q_lora_rank": 128, "kv_lora_rank": 32, "qk_nope_head_dim": 16,
      "qk_rope_head_dim": 8, "v_head_dim": 16, "n_routed_experts": 8, "moe_intermediate_size": 64,
      "n_shared_experts": 2, "first_k_dense_replace": 1, "num_nextn_predict_layers": 1,
      "topk_method": "noaux_tc", "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";
  std::ofstream(dir / "config.json") << config;
  Result<Json> json = ParseJson(config, "config.json");
  EXPECT_TRUE(json.ok());
  Result<ModelSites> sites = BuildModelSites(*json, *ParseDialect("native"));
  EXPECT_TRUE(sites.ok()) << sites.status().message();
  std::vector<testing::TestTensor> tensors;
  const auto add = [&](std::string name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    tensors.push_back(testing::Bf16Tensor(std::move(name), std::move(shape),
                                          std::vector<float>(static_cast<size_t>(n), 0.5f)));
  };
  for (const LayerSite& s : sites->sites) {
    if (!s.shape) continue;  // attention
    const auto [rows, cols] = *s.shape;
    if (s.kind == SiteKind::kMoe) {
      for (int64_t e = 0; e < s.experts; ++e) {
        for (size_t leg = 0; leg < s.legs.size(); ++leg) {
          const bool down = s.legs[leg].name == "down_proj";
          add(s.ExpertLegPath(e, leg) + ".weight",
              down ? std::vector{cols, rows} : std::vector{rows, cols});
        }
      }
    } else if (!s.legs.empty()) {
      for (size_t leg = 0; leg < s.legs.size(); ++leg) {
        add(s.LegPath(leg) + ".weight", {s.legs[leg].rows, cols});
      }
    } else {
      add(s.checkpoint_path + ".weight", {rows, cols});
    }
  }
  for (const OtherTensor& t : sites->other_tensors) add(t.name, t.shape);
  testing::WriteSafetensors(dir / "model.safetensors", tensors);
  return dir;
}

// vLLM and SGLang build DeepSeek's MTP layer only for speculative decoding and skip its weights
// otherwise: load accepts them unread, and needs none of them (a missing MTP norm is no error).
// Native builds it, so there the norm is required.
TEST(LoadOthers, AnMtpLayerTheEngineDoesNotBuildIsSkipped) {
  const std::filesystem::path dir = WriteTinyDeepseek();
  Result<ModelLoad> native = testing::LoadWithEngine(dir.string(), "native");
  ASSERT_TRUE(native.ok()) << native.status().message();
  EXPECT_EQ(native->skipped_tensors, 0);
  // Layer 3's tensors: its embedding, eh_proj, MLA (q_a, kv_a, q_b, kv_b, o), router, shared
  // experts (gate, up, down), 8 × 3 experts, head; enorm, hnorm, q_a and kv_a norms, router bias,
  // two layer norms, shared_head.norm.
  const int64_t mtp_tensors = 1 + 1 + 5 + 1 + 3 + 8 * 3 + 1 + 8;
  for (const char* engine : {"vllm@helpers", "sglang@helpers", "vllm@0.33", "sglang@0.5.23"}) {
    SCOPED_TRACE(engine);
    Result<ModelLoad> load = testing::LoadWithEngine(dir.string(), engine);
    ASSERT_TRUE(load.ok()) << load.status().message();
    EXPECT_EQ(load->skipped_tensors, mtp_tensors);
    EXPECT_EQ(load->tensors, native->tensors);
    EXPECT_LT(load->bytes_read, native->bytes_read);
  }
  const std::string norm = "model.layers.3.enorm.weight";
  const std::filesystem::path without =
      testing::MutatedFixture(dir, [&](testing::TestTensor* t) { return t->name != norm; });
  Result<ModelLoad> vllm = testing::LoadWithEngine(without.string(), "vllm@helpers");
  ASSERT_TRUE(vllm.ok()) << vllm.status().message();
  EXPECT_EQ(vllm->skipped_tensors, mtp_tensors - 1);
  Result<ModelLoad> missing = testing::LoadWithEngine(without.string(), "native");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(norm + " is not in the checkpoint"), std::string::npos)
      << missing.status().message();
}

}  // namespace
}  // namespace quantpath
