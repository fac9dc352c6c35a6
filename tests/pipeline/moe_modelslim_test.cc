// ModelSlim's MoE experts on the Qwen3-MoE checkpoints written from the documentation
// (tests/data/documented/modelslim_qwen3moe_*, SOURCES.md: 2 layers × 4 experts, gate, up and
// down [128, 128]; no producer runs here), read per expert as SGLang's ModelSlim MoE schemes read
// them into the w13 (gate, up) and w2 (down) views. For both moe sites of each folder, through the
// pipeline (importer → plan → materialize → spec → one Linear per expert projection):
//   1. the plan has a spec, a kernel and bytes, and the bytes are what the loaded experts hold;
//   2. each projection's fp64 reference, rounded to bf16 (the dtype the script saved), equals the
//      script's own dequantization (`…experts.N.{gate,up,down}_proj.weight`);
//   3. seeded runs, of one expert and of every expert on the same input, are within tolerance;
// and the attention layers (fused qkv, o) load and run. Then: a paired-packing folder opened with
// the default packing is an error naming both packings, the tensor and the expert.
// (moe_tp_test.cc splits the same folders across two ranks.)
#include <gtest/gtest.h>

#include "fmt/format.h"
#include "quantpath/pipeline.h"
#include "src/specs/int_family.h"
#include "tests/pipeline/producer_values.h"

namespace quantpath {
namespace {

const std::string kDocumented = std::string(QUANTPATH_TEST_DATA) + "/documented/";

struct Folder {
  std::string name;
  std::string spec_id;
  ActMode mode;
  QDType activations;
};

void PrintTo(const Folder& f, std::ostream* os) { *os << f.name; }

class MoeModelSlimTest : public ::testing::TestWithParam<Folder> {};

TEST_P(MoeModelSlimTest, ExpertsMatchTheDequantizationAndRun) {
  const Folder& f = GetParam();
  const std::string packing = f.name.ends_with("_new") ? "new" : "";
  Result<testing::ProducerFolder> folder =
      testing::OpenProducerFolder(kDocumented + f.name, "native", packing);
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  const Model& model = *folder->model;
  int sites = 0;
  int dense = 0;
  for (const LayerDecision& decision : folder->layers) {
    const std::string& path = decision.site->path;
    SCOPED_TRACE(path);
    if (decision.site->kind == SiteKind::kLinear) {
      Result<LoadedLayer> layer = LoadLayer(model, path);
      ASSERT_TRUE(layer.ok()) << layer.status().message();
      EXPECT_EQ(layer->key.ToId(), f.spec_id);
      Result<LayerRun> run = RunSeeded(*layer, 5, 11);
      ASSERT_TRUE(run.ok()) << run.status().message();
      EXPECT_TRUE(run->pass()) << "rel " << run->rel << " tol " << run->tol;
      ++dense;
      continue;
    }
    if (decision.site->kind != SiteKind::kMoe) continue;
    ASSERT_EQ(decision.decision.kind, DecisionKind::kQuantized);
    ASSERT_TRUE(decision.spec.has_value()) << decision.spec_note;
    EXPECT_EQ(decision.spec->ToId(), f.spec_id);
    EXPECT_TRUE(decision.kernel_available);
    ASSERT_TRUE(decision.bytes.has_value()) << decision.spec_note;

    Result<LoadedExperts> loaded = LoadExperts(model, path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    ASSERT_EQ(loaded->experts.size(), 4u);
    EXPECT_EQ(loaded->activation.mode, f.mode);
    EXPECT_EQ(loaded->activation.dtype, f.activations);
    int64_t held = 0;
    for (size_t e = 0; e < loaded->experts.size(); ++e) {
      SCOPED_TRACE(e);
      const LoadedExpert& expert = loaded->experts[e];
      ASSERT_EQ(expert.projections.size(), 3u);
      for (size_t leg = 0; leg < 3; ++leg) {
        const Linear& linear = expert.projections[leg];
        EXPECT_EQ(linear.out_features(), 128);
        EXPECT_EQ(linear.in_features(), 128);
        held += linear.params().WeightBytes();
        Result<ReferenceLayer> ref = DequantizeReference(loaded->checkpoint, loaded->scheme, "test",
                                                         {expert.prefixes[leg]}, false);
        ASSERT_TRUE(ref.ok()) << ref.status().message();
        testing::ExpectLegsMatchSaved(*folder->saved, {expert.prefixes[leg]}, *ref);
      }
    }
    EXPECT_EQ(held, *decision.bytes);

    for (std::optional<int64_t> which : {std::optional<int64_t>(2), std::optional<int64_t>()}) {
      Result<ExpertsRun> run = RunExpertsSeeded(*loaded, 5, 11, which);
      ASSERT_TRUE(run.ok()) << run.status().message();
      EXPECT_EQ(run->experts, which ? 1 : 4);
      EXPECT_TRUE(run->w13.pass()) << "w13 rel " << run->w13.rel << " tol " << run->w13.tol;
      EXPECT_TRUE(run->w2.pass()) << "w2 rel " << run->w2.rel << " tol " << run->w2.tol;
    }
    ++sites;
  }
  EXPECT_EQ(sites, 2);
  EXPECT_EQ(dense, 4);  // qkv and o of each layer
}

INSTANTIATE_TEST_SUITE_P(
    Documented, MoeModelSlimTest,
    ::testing::Values(Folder{"modelslim_qwen3moe_w8a8", "int8_channel", ActMode::kStaticPerTensor,
                             QDType::kINT8},
                      Folder{"modelslim_qwen3moe_w8a8_dynamic", "int8_channel",
                             ActMode::kDynamicPerToken, QDType::kINT8},
                      Folder{"modelslim_qwen3moe_w4a4_dynamic", "int4_channel",
                             ActMode::kDynamicPerToken, QDType::kINT4},
                      Folder{"modelslim_qwen3moe_w4a8_dynamic_new", "int4_channel",
                             ActMode::kDynamicPerToken, QDType::kINT8}),
    [](const ::testing::TestParamInfo<Folder>& info) { return info.param.name; });

TEST(MoeModelSlimErrors, APairedExpertUnderTheDefaultPackingNamesBoth) {
  Result<testing::ProducerFolder> folder =
      testing::OpenProducerFolder(kDocumented + "modelslim_qwen3moe_w4a8_dynamic_new");
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  Result<LoadedExperts> loaded = LoadExperts(*folder->model, "model.layers.1.mlp.experts");
  ASSERT_FALSE(loaded.ok());
  const std::string& message = loaded.status().message();
  EXPECT_NE(message.find("model.layers.1.mlp.experts, expert 0 (gate_proj)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("model.layers.1.mlp.experts.0.gate_proj.weight has shape [64, 128], the "
                         "shape of --modelslim-packing new"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace quantpath
