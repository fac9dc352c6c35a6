// The integer weight-only specs on checkpoints written by the producers themselves
// (tests/data/producers, see its SOURCES.md; GPTQModel's act-order folder has a permuted g_idx):
// for every quantized linear of each folder, through the pipeline (importer → plan → materialize
// → IntSpec → Linear),
//   1. the fp64 reference, rounded to the dtype of the producer's saved dequantization (its scale
//      dtype: bf16 for compressed-tensors, fp16 for auto-round and GPTQModel), equals it exactly,
//      value for value (bit for bit but for the sign of zeros);
//   2. the canonical weights the kernel sees (a Linear run on the identity gives Wᵀ exactly)
//      equal the reference exactly (both are exact in fp32);
//   3. a seeded run is within the family's tolerance.
// Fused layers (qkv_proj, gate_up_proj) are compared leg by leg.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "quantpath/pipeline.h"
#include "src/specs/int_family.h"
#include "tests/pipeline/producer_values.h"

namespace quantpath {
namespace {

const std::string kProducers = std::string(QUANTPATH_TEST_DATA) + "/producers/";

// Two layers × (qkv, o, gate_up, down) each. The Qwen3-MoE folders: moe_producers_test.cc.
class IntProducersTest : public ::testing::TestWithParam<std::string> {};

TEST_P(IntProducersTest, MatchesTheProducersDequantizationAndRuns) {
  const std::string dir = kProducers + GetParam();
  Result<testing::ProducerFolder> folder = testing::OpenProducerFolder(dir);
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  const Model& model = *folder->model;

  int checked = 0;
  for (const LayerDecision& decision : folder->layers) {
    if (decision.site->kind != SiteKind::kLinear || !decision.spec ||
        !IsIntFamily(decision.spec->family)) {
      continue;
    }
    const std::string& path = decision.site->path;
    SCOPED_TRACE(path);
    EXPECT_EQ(decision.kernel_available, true);
    Result<LoadedLayer> loaded = LoadLayer(model, path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    Result<ReferenceLayer> ref = LoadReference(*loaded);
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const int64_t k = ref->cols;

    // 1. The reference against the producer, leg by leg.
    testing::ExpectLegsMatchSaved(*folder->saved, loaded->leg_prefixes, *ref);

    // 2. The canonical weights: Linear(I) = Wᵀ, one exact product per output.
    std::vector<float> identity(static_cast<size_t>(k * k), 0.0f);
    for (int64_t i = 0; i < k; ++i) identity[i * k + i] = 1.0f;
    Result<std::vector<float>> wt = loaded->linear.Forward(identity, k);
    ASSERT_TRUE(wt.ok()) << wt.status().message();
    int64_t differ = 0;
    for (int64_t n = 0; n < ref->rows; ++n) {
      for (int64_t c = 0; c < k; ++c) {
        if (double{(*wt)[c * ref->rows + n]} != ref->weight[n * k + c]) ++differ;
      }
    }
    EXPECT_EQ(differ, 0);

    // 3. A seeded run within tolerance.
    Result<LayerRun> run = RunSeeded(*loaded, 7, 3);
    ASSERT_TRUE(run.ok()) << run.status().message();
    EXPECT_TRUE(run->pass()) << "rel " << run->rel << " tol " << run->tol;
    ++checked;
  }
  EXPECT_EQ(checked, 8);
}

// The 3-bit (GPTQ codes crossing int32 words) and 8-bit (four codes per word) folders plan the
// integer family at their own width, every quantized linear alike.
TEST(IntProducersTest, NonFourBitFoldersPlanTheirWidth) {
  for (const auto& [folder_name, spec_id] :
       {std::pair{"ar_llama_auto_gptq_w3g64_sym", "int3_group_64"},
        std::pair{"ct_llama_w8a16_g64_sym", "int8_group_64"}}) {
    SCOPED_TRACE(folder_name);
    Result<testing::ProducerFolder> folder = testing::OpenProducerFolder(kProducers + folder_name);
    ASSERT_TRUE(folder.ok()) << folder.status().message();
    int linears = 0;
    for (const LayerDecision& decision : folder->layers) {
      if (decision.site->kind != SiteKind::kLinear || decision.site->path == "lm_head") continue;
      SCOPED_TRACE(decision.site->path);
      ASSERT_TRUE(decision.spec.has_value()) << decision.spec_note;
      EXPECT_EQ(decision.spec->ToId(), spec_id);
      ++linears;
    }
    EXPECT_EQ(linears, 8);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Producers, IntProducersTest,
    ::testing::Values("ct_llama_w4a16_g64_sym", "ct_llama_w4a16_g64_asym", "ct_llama_w4a16_channel",
                      "gm_llama_gptq_w4g64_sym_desc_act", "ar_llama_auto_gptq_w4g64_sym",
                      "ar_llama_auto_gptq_w4g64_asym", "ar_llama_auto_awq_w4g64_asym",
                      "ar_llama_auto_round_w4g64_sym", "ar_llama_auto_round_w4g64_asym",
                      "ar_llama_auto_gptq_w3g64_sym", "ct_llama_w8a16_g64_sym"),
    [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace quantpath
