// ModelOpt W4A8_AWQ MoE experts (int4_group_128_prescaled, static fp8 activations) on the
// Qwen3-MoE written from ModelOpt's export layout
// (tests/data/documented/modelopt_qwen3moe_w4a8_awq, SOURCES.md: 2 layers × 4 experts, gate and up
// [256, 128], down [128, 256] with a pre_quant_scale; ModelOpt's own export fails on Qwen3-MoE).
// For both moe sites, through the pipeline (importer → plan → materialize → spec → one Linear per
// expert projection):
//   1. the plan has the spec, a kernel and bytes, and the bytes are what the loaded experts hold;
//   2. each projection's fp64 reference, rounded to bf16 (the dtype the script saved), equals the
//      script's own dequantization, and the loaded parameters hold the projection's own
//      input_scale and, on down_proj only, its pre_quant_scale;
//   3. seeded runs, of one expert and of every expert on the same input, are within tolerance;
// and the attention layers (fused qkv, o) load and run. (moe_tp_test.cc splits the experts
// across two ranks.)
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "quantpath/pipeline.h"
#include "tests/pipeline/producer_values.h"

namespace quantpath {
namespace {

const std::string kFolder = "documented/modelopt_qwen3moe_w4a8_awq";

TEST(MoeW4a8AwqTest, ExpertsMatchTheDequantizationAndRun) {
  Result<testing::ProducerFolder> folder =
      testing::OpenProducerFolder(std::string(QUANTPATH_TEST_DATA) + "/" + kFolder);
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
      EXPECT_EQ(layer->key.ToId(), "int4_group_128_prescaled");
      Result<LayerRun> run = RunSeeded(*layer, 5, 11);
      ASSERT_TRUE(run.ok()) << run.status().message();
      EXPECT_TRUE(run->pass()) << "rel " << run->rel << " tol " << run->tol;
      ++dense;
      continue;
    }
    if (decision.site->kind != SiteKind::kMoe) continue;
    ASSERT_EQ(decision.decision.kind, DecisionKind::kQuantized);
    ASSERT_TRUE(decision.spec.has_value()) << decision.spec_note;
    EXPECT_EQ(decision.spec->ToId(), "int4_group_128_prescaled");
    EXPECT_TRUE(decision.kernel_available);
    ASSERT_TRUE(decision.bytes.has_value()) << decision.spec_note;

    Result<LoadedExperts> loaded = LoadExperts(model, path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    ASSERT_EQ(loaded->experts.size(), 4u);
    EXPECT_EQ(loaded->scheme.weight.load.layout, SourceLayout::kModelOptW4A8Awq);
    EXPECT_EQ(loaded->activation.mode, ActMode::kStaticPerTensor);
    EXPECT_EQ(loaded->activation.dtype, QDType::kFP8E4M3);
    int64_t held = 0;
    for (size_t e = 0; e < loaded->experts.size(); ++e) {
      SCOPED_TRACE(e);
      const LoadedExpert& expert = loaded->experts[e];
      ASSERT_EQ(expert.projections.size(), 3u);
      for (size_t leg = 0; leg < 3; ++leg) {
        const Linear& linear = expert.projections[leg];
        const bool down = leg == 2;
        EXPECT_EQ(linear.out_features(), down ? 128 : 256);
        EXPECT_EQ(linear.in_features(), down ? 256 : 128);
        held += linear.params().WeightBytes();
        Result<ReferenceLayer> ref = DequantizeReference(loaded->checkpoint, loaded->scheme, "test",
                                                         {expert.prefixes[leg]}, false);
        ASSERT_TRUE(ref.ok()) << ref.status().message();
        testing::ExpectLegsMatchSaved(*folder->saved, {expert.prefixes[leg]}, *ref);
        EXPECT_EQ(ref->input_prescale.empty(), !down);

        // Each projection its own input_scale (gate and up: one value, written for both), the
        // prescale on down only.
        const LinearParams& params = linear.params();
        EXPECT_EQ(params.tensor(Slot::kPreQuantScale).empty(), !down);
        Result<TensorView> s = loaded->checkpoint.Get(expert.prefixes[leg] + ".input_scale");
        ASSERT_TRUE(s.ok()) << s.status().message();
        float stored;
        std::memcpy(&stored, s->bytes.data(), 4);
        EXPECT_EQ(LoadFloat(params.tensor(Slot::kInputScale), 0), stored);
      }
    }
    EXPECT_EQ(held, *decision.bytes);

    for (std::optional<int64_t> which : {std::optional<int64_t>(2), std::optional<int64_t>()}) {
      Result<ExpertsRun> run = RunExpertsSeeded(*loaded, 5, 11, which);
      ASSERT_TRUE(run.ok()) << run.status().message();
      EXPECT_EQ(run->experts, which ? 1 : 4);
      EXPECT_TRUE(run->w13.pass()) << "w13 rel " << run->w13.rel << " tol " << run->w13.tol;
      EXPECT_TRUE(run->w2.pass()) << "w2 rel " << run->w2.rel << " tol " << run->w2.tol;
      std::printf("%s %s experts %s: w13 rel %.3g, w2 rel %.3g (tol %.3g)\n", kFolder.c_str(),
                  path.c_str(), which ? "2" : "all", run->w13.rel, run->w2.rel, run->w13.tol);
    }
    ++sites;
  }
  EXPECT_EQ(sites, 2);
  EXPECT_EQ(dense, 4);  // qkv and o of each layer
}

}  // namespace
}  // namespace quantpath
