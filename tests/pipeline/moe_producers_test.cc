// MoE experts on the Qwen3-MoE checkpoints written by the producers themselves
// (tests/data/producers, see its SOURCES.md: 2 layers × 4 experts, each expert's gate, up and down
// [128, 128]; GPTQModel's act-order folder gives every expert its own g_idx). Each folder's fused
// qkv_proj and its o_proj load and run within tolerance. For both moe sites of each folder,
// through the pipeline (importer → plan → materialize → spec → one Linear per expert projection):
//   1. the plan has a spec, a kernel and bytes for the site, and the bytes are what the loaded
//      experts hold;
//   2. each expert projection's fp64 reference, rounded to the dtype of the producer's saved
//      dequantization, equals it exactly (`…experts.3.down_proj.weight`);
//   3. for weight-only families but NVFP4, the canonical weights the kernel sees (a Linear run on
//      the identity gives Wᵀ exactly) equal the reference;
//   4. seeded runs, of one expert and of every expert on the same input, are within tolerance.
// Then errors: a missing expert tensor and a misshapen one name the tensor, the expert and the
// layer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>

#include "fmt/format.h"
#include "quantpath/pipeline.h"
#include "src/specs/bnb_family.h"
#include "src/specs/nvfp4_family.h"
#include "tests/pipeline/producer_values.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

const std::string kData = std::string(QUANTPATH_TEST_DATA) + "/";
const std::string kProducers = kData + "producers/";

Result<Model> Open(const std::string& dir) {
  QP_ASSIGN_OR_RETURN(OpenOptions options, OpenOptions::Parse("native", "", "cpu"));
  return OpenModel(dir, options);
}

// Compares the reference of one projection with the producer's saved dequantization; returns the
// reference.
ReferenceLayer CheckAgainstProducer(const LoadedExperts& layer, const std::string& prefix,
                                    const SafetensorsFile& saved) {
  Result<ReferenceLayer> ref =
      DequantizeReference(layer.checkpoint, layer.scheme, "test", {prefix}, false);
  EXPECT_TRUE(ref.ok()) << ref.status().message();
  if (!ref.ok()) return {};
  testing::ExpectLegsMatchSaved(saved, {prefix}, *ref);
  return std::move(*ref);
}

// Linear(I) = Wᵀ: one product per output for a weight-only spec, equal to the reference rounded
// to fp32 (exact for the integer and fp8 families) or, where the kernel takes the weights in
// bf16 (bitsandbytes' on the AVX-512 BF16 path) or applies SCB / 127 as one factor, within
// `rel_bound` of it.
void CheckCanonicalWeights(const Linear& linear, const ReferenceLayer& ref, double rel_bound) {
  const int64_t k = ref.cols;
  std::vector<float> identity(static_cast<size_t>(k * k), 0.0f);
  for (int64_t i = 0; i < k; ++i) identity[i * k + i] = 1.0f;
  Result<std::vector<float>> wt = linear.Forward(identity, k);
  ASSERT_TRUE(wt.ok()) << wt.status().message();
  int64_t differ = 0;
  for (int64_t n = 0; n < ref.rows; ++n) {
    for (int64_t c = 0; c < k; ++c) {
      const double want = static_cast<float>(ref.weight[n * k + c]);
      if (std::abs((*wt)[c * ref.rows + n] - want) > rel_bound * std::abs(want)) ++differ;
    }
  }
  EXPECT_EQ(differ, 0);
}

class MoeProducersTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MoeProducersTest, ExpertsMatchTheProducersDequantizationAndRun) {
  const std::string dir = kData + GetParam();
  Result<testing::ProducerFolder> folder = testing::OpenProducerFolder(dir);
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  const Model& model = *folder->model;

  int sites = 0;
  int fused = 0;
  for (const LayerDecision& decision : folder->layers) {
    // The attention projections plan with vLLM's fused qkv_proj and load as dense layers.
    if (decision.site->kind == SiteKind::kLinear) {
      SCOPED_TRACE(decision.site->path);
      fused += decision.site->legs.size() == 3 ? 1 : 0;
      // Block fp8 cannot hold this tiny model's k_proj and v_proj (64 rows) in 128-row blocks.
      if (!decision.bytes) {
        EXPECT_NE(decision.spec_note.find("k_proj is not"), std::string::npos)
            << decision.spec_note;
        continue;
      }
      Result<LoadedLayer> dense = LoadLayer(model, decision.site->path);
      ASSERT_TRUE(dense.ok()) << dense.status().message();
      Result<LayerRun> run = RunSeeded(*dense, 5, 11);
      ASSERT_TRUE(run.ok()) << run.status().message();
      EXPECT_TRUE(run->pass()) << "rel " << run->rel << " tol " << run->tol;
    }
    if (decision.site->kind != SiteKind::kMoe) continue;
    const std::string& path = decision.site->path;
    SCOPED_TRACE(path);
    ASSERT_EQ(decision.decision.kind, DecisionKind::kQuantized);
    ASSERT_TRUE(decision.spec.has_value()) << decision.spec_note;
    EXPECT_EQ(decision.kernel_available, true);
    ASSERT_TRUE(decision.bytes.has_value()) << decision.spec_note;

    Result<LoadedExperts> loaded = LoadExperts(model, path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    ASSERT_EQ(loaded->experts.size(), 4u);
    EXPECT_EQ(loaded->key, *decision.spec);
    int64_t held = 0;
    for (size_t e = 0; e < loaded->experts.size(); ++e) {
      SCOPED_TRACE(e);
      const LoadedExpert& expert = loaded->experts[e];
      ASSERT_EQ(expert.projections.size(), 3u);
      EXPECT_EQ(expert.prefixes,
                (std::vector<std::string>{fmt::format("{}.{}.gate_proj", path, e),
                                          fmt::format("{}.{}.up_proj", path, e),
                                          fmt::format("{}.{}.down_proj", path, e)}));
      for (size_t leg = 0; leg < 3; ++leg) {
        const Linear& linear = expert.projections[leg];
        EXPECT_EQ(linear.out_features(), 128);
        EXPECT_EQ(linear.in_features(), 128);
        held += linear.params().WeightBytes();
        const ReferenceLayer ref =
            CheckAgainstProducer(*loaded, expert.prefixes[leg], *folder->saved);
        // NVFP4's kernel multiplies by fp32(1 / global) where the producer divides (an ulp
        // apart), and runs up with gate's global: its runs are measured, not its products.
        if (loaded->activation.mode == ActMode::kNone && loaded->key.family != kNvfp4Family) {
          const bool bnb = loaded->key.family == kNf4Family || loaded->key.family == kFp4Family ||
                           loaded->key.family == kBnbInt8Family;
          CheckCanonicalWeights(linear, ref, bnb ? ToleranceFor(loaded->key, ActMode::kNone) : 0.0);
        }
      }
    }
    EXPECT_EQ(held, *decision.bytes);

    for (std::optional<int64_t> which : {std::optional<int64_t>(3), std::optional<int64_t>()}) {
      Result<ExpertsRun> run = RunExpertsSeeded(*loaded, 5, 11, which);
      ASSERT_TRUE(run.ok()) << run.status().message();
      EXPECT_EQ(run->experts, which ? 1 : 4);
      EXPECT_TRUE(run->w13.pass()) << "w13 rel " << run->w13.rel << " tol " << run->w13.tol;
      EXPECT_TRUE(run->w2.pass()) << "w2 rel " << run->w2.rel << " tol " << run->w2.tol;
      // The kernel is not the reference; with MXFP4 activations, or MXFP8 ones on MXFP4 weights,
      // every product and these tiny sums are exact in fp32 (E2M1 × E2M1 or E2M1 × E4M3 values
      // times powers of two), so both give the same values.
      const bool exact = loaded->activation.dtype == QDType::kMXFP4 ||
                         (loaded->activation.dtype == QDType::kMXFP8 &&
                          loaded->scheme.weight.dtype == QDType::kMXFP4);
      if (!exact) {
        EXPECT_GT(run->w13.rel, 0.0);
      }
      std::printf("%s %s expert %s: w13 rel %.3g, w2 rel %.3g (tol %.3g)\n", GetParam().c_str(),
                  path.c_str(), which ? "3" : "all", run->w13.rel, run->w2.rel, run->w13.tol);
    }
    ++sites;
  }
  EXPECT_EQ(sites, 2);
  EXPECT_EQ(fused, 2);
}

// The folder's name.
std::string FolderName(const ::testing::TestParamInfo<std::string>& info) {
  return std::filesystem::path(info.param).filename().string();
}

INSTANTIATE_TEST_SUITE_P(
    Producers, MoeProducersTest,
    ::testing::Values("producers/ct_qwen3moe_w4a16_g64_sym", "producers/ct_qwen3moe_fp8_dynamic",
                      "producers/ct_qwen3moe_fp8_block",
                      "producers/ar_qwen3moe_auto_round_w4g64_sym",
                      "producers/gm_qwen3moe_gptq_w4g64_sym_desc_act", "producers/bnb_qwen3moe_nf4",
                      "producers/bnb_qwen3moe_fp4_dq", "producers/bnb_qwen3moe_int8",
                      "producers/ct_qwen3moe_nvfp4a16", "producers/ct_qwen3moe_nvfp4",
                      "producers/ct_qwen3moe_mxfp4", "producers/ct_qwen3moe_mxfp8",
                      "producers/mo_qwen3moe_nvfp4"),
    FolderName);

// ModelSlim's MX experts, written from seed 003's description (tests/data/documented/SOURCES.md).
INSTANTIATE_TEST_SUITE_P(Documented, MoeProducersTest,
                         ::testing::Values("documented/modelslim_qwen3moe_w4a4_mxfp4",
                                           "documented/modelslim_qwen3moe_w4a8_mxfp",
                                           "documented/modelslim_qwen3moe_w8a8_mxfp8"),
                         FolderName);

// A copy of the compressed-tensors W4A16 fixture with `edit` applied to its tensors.
std::filesystem::path EditedFixture(
    const std::function<void(std::vector<testing::TestTensor>*)>& edit) {
  const std::filesystem::path from = kProducers + "ct_qwen3moe_w4a16_g64_sym";
  const std::filesystem::path dir = testing::FreshDir();
  std::filesystem::copy_file(from / "config.json", dir / "config.json");
  Result<std::shared_ptr<const SafetensorsFile>> file =
      SafetensorsFile::Open(from / "model.safetensors");
  EXPECT_TRUE(file.ok()) << file.status().message();
  std::vector<testing::TestTensor> tensors;
  for (const TensorInfo& info : (*file)->tensors()) {
    const TensorView view = (*file)->View(info);
    const auto* bytes = reinterpret_cast<const uint8_t*>(view.bytes.data());
    tensors.push_back({info.name, std::string(StDtypeName(info.dtype)), info.shape,
                       std::vector<uint8_t>(bytes, bytes + view.bytes.size())});
  }
  edit(&tensors);
  testing::WriteSafetensors(dir / "model.safetensors", tensors);
  return dir;
}

std::string LoadError(const std::filesystem::path& dir, const std::string& layer) {
  Result<Model> model = Open(dir.string());
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return "";
  Result<LoadedExperts> loaded = LoadExperts(*model, layer);
  EXPECT_FALSE(loaded.ok());
  return loaded.ok() ? "" : loaded.status().message();
}

TEST(MoeLoadErrors, MissingExpertTensorNamesTensorExpertAndLayer) {
  const std::string missing = "model.layers.1.mlp.experts.2.up_proj.weight_scale";
  const std::string message = LoadError(
      EditedFixture([&](std::vector<testing::TestTensor>* tensors) {
        std::erase_if(*tensors, [&](const testing::TestTensor& t) { return t.name == missing; });
      }),
      "model.layers.1.mlp.experts");
  EXPECT_NE(message.find(missing), std::string::npos) << message;
  EXPECT_NE(message.find("model.layers.1.mlp.experts, expert 2 (up_proj)"), std::string::npos)
      << message;
}

TEST(MoeLoadErrors, MisshapenExpertTensorNamesTensorExpertAndLayer) {
  const std::string misshapen = "model.layers.0.mlp.experts.3.down_proj.weight_packed";
  const std::string message =
      LoadError(EditedFixture([&](std::vector<testing::TestTensor>* tensors) {
                  for (testing::TestTensor& t : *tensors) {
                    if (t.name == misshapen) t.shape = {64, 32};  // same bytes, other shape
                  }
                }),
                "model.layers.0.mlp.experts");
  EXPECT_NE(message.find(misshapen), std::string::npos) << message;
  EXPECT_NE(message.find("model.layers.0.mlp.experts, expert 3 (down_proj)"), std::string::npos)
      << message;
}

TEST(MoeLoadErrors, ExpertOutOfRangeAndDenseLayers) {
  Result<Model> model = Open(kProducers + "ct_qwen3moe_w4a16_g64_sym");
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<LoadedExperts> loaded = LoadExperts(*model, "model.layers.0.mlp.experts");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  Result<ExpertsRun> run = RunExpertsSeeded(*loaded, 2, 0, 4);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("expert 4 is out of range"), std::string::npos)
      << run.status().message();
  Result<LoadedExperts> dense = LoadExperts(*model, "model.layers.0.self_attn.o_proj");
  ASSERT_FALSE(dense.ok());
  EXPECT_NE(dense.status().message().find("not the experts of an MoE layer"), std::string::npos);
  Result<LoadedLayer> whole = LoadLayer(*model, "model.layers.0.mlp.experts");
  ASSERT_FALSE(whole.ok());
  EXPECT_NE(whole.status().message().find("LoadExperts"), std::string::npos);
}

}  // namespace
}  // namespace quantpath
